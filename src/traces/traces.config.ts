// The OpenTelemetry variables (docs/operations.md#traces), read with the rest
// of the configuration so a bad value stops the start with the variable's
// name. Nothing of the SDK is imported here: with tracing off it is never
// loaded (src/main.ts imports traces.sdk.ts only when this returns a config).

type OtlpProtocol = 'http/protobuf' | 'http/json';

type SamplerName = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface TracesConfig {
  /** Where spans are POSTed: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  protocol: OtlpProtocol;
  /** OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS over it. */
  headers: Record<string, string>;
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES (service.name there yields to OTEL_SERVICE_NAME). */
  resourceAttributes: Record<string, string>;
  sampler: SamplerName;
  /** The ratio of the traceidratio samplers, 0 to 1. */
  samplerRatio: number;
}

export class TracesConfigError extends Error {}

const DEFAULT_ENDPOINT = 'http://localhost:4318';

/** The value without its surrounding blanks (src/config.parse.ts's `text` keeps a value as given); unset or blank: undefined. */
function trimmedValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

/** The error never repeats the value: a URL may carry credentials (https://user:token@host). */
function httpUrl(name: string, raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new TracesConfigError(`${name} must be an http:// or https:// URL such as https://otel.example.com:4318 (OTLP over HTTP)`);
  }
  return raw;
}

/** The W3C Baggage-like list the OTEL_* spec uses: key=value pairs separated by commas, values percent-encoded. */
function keyValues(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const raw = trimmedValue(env, name);
  const result: Record<string, string> = {};
  if (raw === undefined) return result;
  for (const entry of raw.split(',')) {
    if (entry.trim() === '') continue;
    const at = entry.indexOf('=');
    const key = at < 0 ? '' : entry.slice(0, at).trim();
    if (key === '') throw new TracesConfigError(`${name} must be a list of key=value pairs separated by commas, got an entry without a key`);
    try {
      result[decodeURIComponent(key)] = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      // The value is never repeated: a header may hold a token.
      throw new TracesConfigError(`${name}: the value of "${key}" is not valid percent-encoding`);
    }
  }
  return result;
}

function protocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const name =
    trimmedValue(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const raw = trimmedValue(env, name) ?? 'http/protobuf';
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  if (raw === 'grpc')
    throw new TracesConfigError(`${name}=grpc is not supported: this service sends OTLP over HTTP; use http/protobuf (port 4318) or http/json`);
  throw new TracesConfigError(`${name} must be http/protobuf or http/json, got "${raw}"`);
}

function samplerSetting(env: NodeJS.ProcessEnv): { sampler: SamplerName; samplerRatio: number } {
  const raw = trimmedValue(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!SAMPLERS.includes(raw as SamplerName)) throw new TracesConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${raw}"`);
  const arg = trimmedValue(env, 'OTEL_TRACES_SAMPLER_ARG');
  let samplerRatio = 1;
  if (arg !== undefined && raw.endsWith('traceidratio')) {
    samplerRatio = Number(arg);
    if (!/^\d*\.?\d+$/.test(arg) || samplerRatio > 1)
      throw new TracesConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "${arg}"`);
  }
  return { sampler: raw as SamplerName, samplerRatio };
}

/**
 * undefined: tracing off. On when an OTLP endpoint is named or
 * OTEL_TRACES_EXPORTER=otlp; OTEL_TRACES_EXPORTER=none or
 * OTEL_SDK_DISABLED=true turn it off whatever else is set.
 */
export function tracesConfig(env: NodeJS.ProcessEnv, defaultServiceName: string): TracesConfig | undefined {
  const disabled = trimmedValue(env, 'OTEL_SDK_DISABLED')?.toLowerCase();
  if (disabled !== undefined && disabled !== 'true' && disabled !== 'false') {
    throw new TracesConfigError(`OTEL_SDK_DISABLED must be true or false, got "${env.OTEL_SDK_DISABLED}"`);
  }
  const exporter = trimmedValue(env, 'OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    throw new TracesConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`);
  }
  const tracesEndpoint = trimmedValue(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = trimmedValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (disabled === 'true' || exporter === 'none') return undefined;
  if (tracesEndpoint === undefined && endpoint === undefined && exporter !== 'otlp') return undefined;

  // The signal-specific endpoint is used as given; the general one is a base the signal's path is appended to.
  const url =
    tracesEndpoint !== undefined
      ? httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint)
      : `${httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const resourceAttributes = keyValues(env, 'OTEL_RESOURCE_ATTRIBUTES');
  return {
    url,
    protocol: protocol(env),
    headers: { ...keyValues(env, 'OTEL_EXPORTER_OTLP_HEADERS'), ...keyValues(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') },
    serviceName: trimmedValue(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? defaultServiceName,
    resourceAttributes,
    ...samplerSetting(env),
  };
}
