import {
  SpanStatusCode,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type HrTime,
  type SpanContext,
  type SpanKind,
  type SpanStatus,
} from '@opentelemetry/api';
import { addHrTimes, hrTimeDuration, millisToHrTime, type InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * The spans this service records: a request's server span and its
 * statements' spans (docs/operations.md#traces). They are made here, not by
 * the SDK's tracer: the SDK's span asks the sampler again for every
 * statement, copies and checks its attributes against limits, keeps a clock
 * anchor, and on Node 20 its allocations were a third of what tracing cost a
 * sampled request (docs/benchmark.md#cost-of-traces). This one is a plain
 * object that is its own ReadableSpan (the SDK's exported interface), so
 * once ended it goes to the SDK's batch processor and OTLP exporter as any
 * SDK span would.
 *
 * Only sampled requests get one (src/traces/traces.sampling.ts): its trace
 * flags always say sampled, and a statement's span is always a child of its
 * request's, in the same trace.
 */

/** What every span of the process shares: where it goes once ended, what it is exported under, its span ids. */
export interface SpanSink {
  processor: SpanProcessor;
  resource: Resource;
  scope: InstrumentationScope;
  spanId: () => string;
}

// Wall-clock time as the SDK takes it: the process's time origin plus the monotonic clock, in [seconds, nanoseconds].
// The origin is converted once; the SDK's hrTime() converts it again for every call.
const ORIGIN = millisToHrTime(performance.timeOrigin);
const now = (): HrTime => addHrTimes(ORIGIN, millisToHrTime(performance.now()));

const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };
const NONE: [] = [];

export class RecordedSpan implements ReadableSpan {
  readonly startTime = now();
  endTime: HrTime = [0, 0];
  duration: HrTime = [0, 0];
  ended = false;
  status = UNSET;
  readonly resource: Resource;
  readonly instrumentationScope: InstrumentationScope;
  readonly links = NONE;
  readonly events = NONE;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  private readonly context: SpanContext;

  /** `attributes` becomes the span's own: the caller hands over a fresh object. */
  constructor(
    private readonly sink: SpanSink,
    public name: string,
    readonly kind: SpanKind,
    readonly attributes: Attributes,
    traceId: string,
    readonly parentSpanContext: SpanContext | undefined,
    traceState = parentSpanContext?.traceState,
  ) {
    this.resource = sink.resource;
    this.instrumentationScope = sink.scope;
    this.context = { traceId, spanId: sink.spanId(), traceFlags: TraceFlags.SAMPLED, traceState };
  }

  spanContext(): SpanContext {
    return this.context;
  }

  /** A span under this one, in its trace: a statement's under its request's. */
  child(name: string, kind: SpanKind, attributes: Attributes): RecordedSpan {
    return new RecordedSpan(this.sink, name, kind, attributes, this.context.traceId, this.context);
  }

  // What is set after the span has ended is ignored, as the SDK's span ignores it: it has been handed to the exporter.
  setAttribute(key: string, value: AttributeValue): void {
    if (!this.ended) this.attributes[key] = value;
  }

  setStatus(status: SpanStatus): void {
    if (!this.ended) this.status = status;
  }

  updateName(name: string): void {
    if (!this.ended) this.name = name;
  }

  end(): void {
    if (this.ended) return;
    this.endTime = now();
    this.duration = hrTimeDuration(this.startTime, this.endTime);
    this.ended = true;
    this.sink.processor.onEnd(this);
  }
}
