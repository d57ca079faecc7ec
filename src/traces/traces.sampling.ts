import { isSpanContextValid, SpanKind, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  RandomIdGenerator,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  type IdGenerator,
  type Sampler,
} from '@opentelemetry/sdk-trace-node';
import type { TracesConfig } from './traces.config.js';

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
 * (docs/benchmark.md#cost-of-traces). The SDK's tracer draws a span id and,
 * for a new trace, a trace id, asks the sampler, and for a request it drops
 * still makes a span context and a non-recording span. Here the trace id is
 * drawn first and the configured sampler asked with it; a request it drops
 * costs nothing more, and a sampled one goes to the tracer, whose id
 * generator (this object) hands it that same trace id. So the SDK's own
 * decision, made again in startSpan, is the same one, on the same id.
 */
export class SampledFirst implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  /** The trace id the sampler has just judged; the tracer's next new trace takes it. */
  private judged: string | undefined;

  constructor(private readonly sampler: Sampler) {}

  generateSpanId = (): string => this.random.generateSpanId();

  generateTraceId = (): string => {
    const id = this.judged ?? this.random.generateTraceId();
    this.judged = undefined;
    return id;
  };

  /**
   * The request's span under `parent` (the caller's trace, if it sent one), or undefined if not sampled;
   * `tracer` is of the provider given this object as its `idGenerator` and this sampler.
   */
  start(tracer: Tracer, name: string, parent: Context): Span | undefined {
    const caller = trace.getSpanContext(parent);
    const newTrace = caller === undefined || !isSpanContextValid(caller);
    const traceId = newTrace ? this.random.generateTraceId() : caller.traceId;
    if (this.sampler.shouldSample(parent, traceId, name, SpanKind.SERVER, {}, []).decision === SamplingDecision.NOT_RECORD) return undefined;
    if (!newTrace) return tracer.startSpan(name, { kind: SpanKind.SERVER }, parent);
    // Synchronous from here to startSpan's call of generateTraceId: no other span can take the id. Forgotten
    // after it either way, so an id the tracer did not take can never go to a later trace.
    this.judged = traceId;
    try {
      return tracer.startSpan(name, { kind: SpanKind.SERVER }, parent);
    } finally {
      this.judged = undefined;
    }
  }
}
