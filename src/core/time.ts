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

let zone: { tz: string | undefined; name: string } | undefined;
/** The IANA name of the process time zone, for SQL that must read a timestamp's date in it; looked up again only when TZ changes. */
export function timeZoneName(): string {
  if (zone === undefined || zone.tz !== process.env.TZ) zone = { tz: process.env.TZ, name: Intl.DateTimeFormat().resolvedOptions().timeZone };
  return zone.name;
}

export function today(): string {
  return formatDate(new Date());
}

/** `YYYY-MM-DD HH:mm:ss.SSS`: audit record times, where several changes can share a second. */
export function formatDateTimeMs(d: Date): string {
  return `${formatDateTime(d)}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}
