import { isSpanContextValid, SpanKind, trace, type Context } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  RandomIdGenerator,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-node';
import type { TracesConfig } from './traces.config.js';
import { RecordedSpan, type SpanSink } from './traces.span.js';

/** The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name (docs/operations.md#traces). */
export function buildSampler({ sampler: name, samplerRatio }: TracesConfig): Sampler {
  const root = name.endsWith('always_off')
    ? new AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(samplerRatio)
      : new AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/**
 * Starts a request's server span only once the sampler has said yes
 * (docs/benchmark.md#cost-of-traces): the trace id is drawn first (or taken
 * from the caller's trace) and the configured sampler asked with it, so a
 * request it drops costs the decision and nothing more: no span, no span
 * context, no ids. A kept request gets a RecordedSpan with that trace id;
 * its statements' spans are its children and are not asked again, as every
 * sampler offered would keep them (the parent-based ones follow the parent,
 * the ratio one judges the same trace id, always_on keeps all).
 */
export class SampledFirst {
  private readonly random = new RandomIdGenerator();
  private readonly sink: SpanSink;

  constructor(
    private readonly sampler: Sampler,
    sink: Omit<SpanSink, 'spanId'>,
  ) {
    this.sink = { ...sink, spanId: () => this.random.generateSpanId() };
  }

  /** The request's span under `parent` (the caller's trace, if it sent one), or undefined if not sampled. */
  start(name: string, parent: Context): RecordedSpan | undefined {
    const caller = trace.getSpanContext(parent);
    const joins = caller !== undefined && isSpanContextValid(caller);
    const traceId = joins ? caller.traceId : this.random.generateTraceId();
    const result = this.sampler.shouldSample(parent, traceId, name, SpanKind.SERVER, {}, []);
    // RECORD (kept but not sampled) is exported by no processor; none of the samplers offered gives it.
    if (result.decision !== SamplingDecision.RECORD_AND_SAMPLED) return undefined;
    return new RecordedSpan(
      this.sink,
      name,
      SpanKind.SERVER,
      { ...result.attributes },
      traceId,
      joins ? caller : undefined,
      result.traceState ?? (joins ? caller.traceState : undefined),
    );
  }
}
