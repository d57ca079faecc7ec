import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ProtobufTraceSerializer as Serializer } from '@opentelemetry/otlp-transformer';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyWithout, readHunks, ROOT, type PatchHunk } from './support/patch.hunks.js';
import { decode } from './support/otlp-receiver.js';

// The OTLP protobuf serializer is patched at install for speed
// (patches/@opentelemetry+otlp-transformer+0.223.0.patch;
// docs/architecture.md#choices-we-made): strings in one pass, ids written
// without a copy. A speed patch must not change a byte: here the installed
// serializer and a copy with every hunk taken out again (0.223.0 as released)
// serialize the same spans, strings of every kind, and must agree exactly;
// what they write must decode to what the spans held.

const NAME = '@opentelemetry/otlp-transformer';
const CHANGES = ['otlp-string-one-pass', 'otlp-hex-in-place'];
// Inside node_modules, so the copy finds the packages it requires as the installed one does.
const COPY = join(ROOT, 'node_modules', '.cache', `otlp-transformer-released-${process.pid}`);

let hunks: PatchHunk[];
let patched: typeof Serializer;
let released: typeof Serializer;
beforeAll(async () => {
  hunks = await readHunks(NAME, '@opentelemetry+otlp-transformer+0.223.0.patch');
  await mkdir(join(ROOT, 'node_modules', '.cache'), { recursive: true });
  const require = createRequire(import.meta.url);
  patched = (require(NAME) as { ProtobufTraceSerializer: typeof Serializer }).ProtobufTraceSerializer;
  released = (require(await copyWithout(NAME, COPY, hunks, () => true)) as { ProtobufTraceSerializer: typeof Serializer }).ProtobufTraceSerializer;
});
afterAll(async () => {
  await rm(COPY, { recursive: true, force: true });
});

// Each length around a boundary of the patch (42: the last one-byte-length short string) or of a varint (127, 16383).
const LENGTHS = [0, 1, 41, 42, 43, 127, 128, 300, 16383, 16384, 40000];
// ASCII, two-, three- and four-byte UTF-8, and lone surrogates (written as U+FFFD).
const CHARACTERS = ['a', '~', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '中', '😀', '\ud800', '\udfff'];

function text(seed: number): string {
  const length = LENGTHS[seed % LENGTHS.length]!;
  if (seed % 3 === 0) return 'x'.repeat(length);
  const ascii = seed % 3 === 1;
  let s = '';
  for (let i = 0; s.length < length; i++) s += ascii ? String.fromCharCode(32 + ((seed + i * 7) % 95)) : CHARACTERS[(seed + i) % CHARACTERS.length]!;
  // A non-ASCII character last, after a run of ASCII: the one-pass copy must start again.
  return seed % 5 === 0 ? s.slice(0, Math.max(0, length - 1)) + 'é' : s.slice(0, length);
}

function spans(count: number): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('serializer-test', '1.0');
  for (let i = 0; i < count; i++) {
    const parent =
      i % 2 === 0
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId: randomBytes(16).toString('hex'),
            spanId: randomBytes(8).toString('hex'),
            traceFlags: 1,
            isRemote: i % 4 === 1,
            traceState: i % 3 === 0 ? new TraceState(`vendor=${i}`) : undefined,
          });
    const span = tracer.startSpan(
      text(i),
      {
        kind: i % 5,
        attributes: { [text(i + 1) || 'k']: text(i + 2), n: i, f: i / 7, b: i % 2 === 0, list: [text(i + 3), text(i + 4)] },
        links: i % 4 === 0 ? [{ context: { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), traceFlags: 1 }, attributes: { l: text(i + 5) } }] : [],
      },
      parent,
    );
    if (i % 3 === 0) span.addEvent(text(i + 6), { e: text(i + 7) });
    if (i % 4 === 0) span.setStatus({ code: 2, message: text(i + 8) });
    span.end();
  }
  return exporter.getFinishedSpans();
}

describe('the patched OTLP protobuf serializer', () => {
  it('carries exactly the changes it names, each in every hunk that has it', () => {
    expect(hunks.length).toBeGreaterThan(0);
    for (const hunk of hunks) {
      const named = [...hunk.added.matchAll(/Patched, ([a-z-]+)/g)].map((m) => m[1]);
      expect(named.length, `${hunk.file}: a hunk names no change`).toBeGreaterThan(0);
      for (const change of named) expect(CHANGES).toContain(change);
    }
    for (const change of CHANGES)
      expect(
        hunks.some((hunk) => hunk.added.includes(`Patched, ${change} (`)),
        `${change} without its upstream reference`,
      ).toBe(true);
  });

  it('writes byte for byte what the release writes, for batches of one to 300 spans', () => {
    const all = spans(300);
    let batches = 0;
    for (const size of [1, 7, 300]) {
      for (let at = 0; at < all.length; at += size) {
        const batch = all.slice(at, at + size);
        const mine = Buffer.from(patched.serializeRequest(batch)!);
        const theirs = Buffer.from(released.serializeRequest(batch)!);
        expect(mine.equals(theirs), `a batch of ${size} at ${at} differs`).toBe(true);
        batches++;
      }
    }
    expect(batches).toBeGreaterThan(300);
  });

  it('writes what the spans hold: names, attributes, ids, trace state, as UTF-8', () => {
    const all = spans(200);
    const decoded = decode({ contentType: 'application/x-protobuf', body: Buffer.from(patched.serializeRequest(all)!) });
    expect(decoded).toHaveLength(all.length);
    // As UTF-8 has it: a lone surrogate becomes U+FFFD.
    const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('utf8');
    all.forEach((span, i) => {
      const got = decoded[i]!;
      expect(got.name).toBe(utf8(span.name));
      expect(got.kind).toBe(span.kind + 1); // OTLP counts from 1: 0 is unspecified
      expect(got.traceId).toBe(span.spanContext().traceId);
      expect(got.spanId).toBe(span.spanContext().spanId);
      expect(got.parentSpanId).toBe(span.parentSpanContext?.spanId ?? '');
      expect(got.traceState).toBe(span.spanContext().traceState?.serialize() ?? '');
      for (const [key, value] of Object.entries(span.attributes)) {
        if (typeof value === 'string') expect(got.attributes[utf8(key)]).toBe(utf8(value));
      }
    });
  });
});
