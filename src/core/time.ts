// Times leave the service as `YYYY-MM-DD HH:mm:ss` in the process time zone
// (TZ), and "today" for a tenant's service period is the date in that zone.
// Done here rather than in SQL so both databases agree whatever their own
// TimeZone setting is.

const pad = (n: number) => String(n).padStart(2, '0');

function formatDate(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

export function formatDateTime(d: Date): string;
export function formatDateTime(d: Date | null): string | null;
export function formatDateTime(d: Date | null): string | null {
  if (d === null) return null;
  return `${formatDate(d)} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function today(): string {
  return formatDate(new Date());
}

/** `YYYY-MM-DD HH:mm:ss.SSS`: audit record times, where several changes can share a second. */
export function formatDateTimeMs(d: Date): string {
  return `${formatDateTime(d)}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}
