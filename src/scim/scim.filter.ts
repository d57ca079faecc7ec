import { invalidFilter, shown } from './scim.error.js';

// The SCIM `filter` query parameter (RFC 7644 §3.4.2.2), parsed by hand into
// a small tree. The tree names attributes as the client wrote them; what they
// mean, and the SQL they become, is scim.filter.where.ts's business, which
// imports this file and never the other way round.

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type Literal = string | number | boolean | null;

/**
 * A parsed filter. `path` is the attribute path as written (it may carry a
 * schema URN prefix); names are case-insensitive (RFC 7643 §2.1), so
 * filterToSql (scim.filter.where.ts) lower-cases them before the lookup.
 * Inside a `value` node (`emails[type eq "work"]`) paths name
 * sub-attributes of `path`.
 */
export type Filter =
  | { op: 'and' | 'or'; left: Filter; right: Filter }
  | { op: 'not'; filter: Filter }
  | { op: 'pr'; path: string }
  | { op: CompareOp; path: string; value: Literal }
  | { op: 'value'; path: string; filter: Filter };

/** Bounds on what one request may ask the parser and the planner to do; beyond them: 400 invalidFilter. */
const MAX_FILTER_LENGTH = 2000;
const MAX_FILTER_DEPTH = 20;
const MAX_FILTER_COMPARISONS = 50;

const COMPARE_OPS: ReadonlySet<string> = new Set<CompareOp>(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);

interface Token {
  kind: '(' | ')' | '[' | ']' | 'word' | 'string';
  text: string;
  /** The decoded value of a string token. */
  value?: string;
  at: number;
}

/**
 * Words run up to white space, a bracket or a quote; a string is a JSON
 * string (RFC 7644 §3.4.2.2 takes JSON literals), so JSON.parse decodes
 * its escapes and refuses a bad one or a raw control character.
 */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ kind: c, text: c, at: i++ });
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw invalidFilter(`Unterminated string at position ${i}`);
      const raw = text.slice(i, j + 1);
      let value: string;
      try {
        value = JSON.parse(raw) as string;
      } catch {
        throw invalidFilter(`Invalid string ${shown(raw)} at position ${i}: strings are JSON strings`);
      }
      tokens.push({ kind: 'string', text: raw, value, at: i });
      i = j + 1;
    } else {
      const end = text.slice(i).search(/[\s()[\]"]/);
      const word = end < 0 ? text.slice(i) : text.slice(i, i + end);
      tokens.push({ kind: 'word', text: word, at: i });
      i += word.length;
    }
  }
  return tokens;
}

/**
 * attrPath = [URI ":"] ATTRNAME ["." subAttr] (RFC 7644 §3.4.2.2, RFC 7643
 * §2.1). A schema URN ends at its last colon: names have none, while the URN
 * has dots of its own (`core:2.0:User:name.familyName`).
 */
const NAME = String.raw`(?:\$ref|[A-Za-z][A-Za-z0-9_-]*)`;
const ATTR_PATH = new RegExp(String.raw`^(?:urn:[A-Za-z0-9:._~%+-]*:)?${NAME}(?:\.${NAME})?$`, 'i');

class Parser {
  private pos = 0;
  private depth = 0;
  private comparisons = 0;
  private inValuePath = false;

  constructor(private readonly tokens: Token[]) {}

  parse(): Filter {
    const filter = this.or();
    const rest = this.tokens[this.pos];
    if (rest) throw invalidFilter(`Unexpected ${shown(rest.text)} at position ${rest.at}`);
    return filter;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private isWord(token: Token | undefined, word: string): boolean {
    return token?.kind === 'word' && token.text.toLowerCase() === word;
  }

  private expect(kind: Token['kind'], what: string): Token {
    const token = this.tokens[this.pos];
    if (token?.kind !== kind) throw invalidFilter(`Expected ${what} ${token ? `at position ${token.at}, found ${shown(token.text)}` : 'at the end'}`);
    this.pos++;
    return token;
  }

  /** Parentheses, `not (` and value paths each nest one level; the bound keeps the recursion (and the SQL) shallow. */
  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_FILTER_DEPTH) throw invalidFilter(`The filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    const result = parse();
    this.depth--;
    return result;
  }

  // Precedence, loosest first: or, and, not (RFC 7644 §3.4.2.2, table 5).
  private or(): Filter {
    let left = this.and();
    while (this.isWord(this.peek(), 'or')) {
      this.pos++;
      left = { op: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): Filter {
    let left = this.factor();
    while (this.isWord(this.peek(), 'and')) {
      this.pos++;
      left = { op: 'and', left, right: this.factor() };
    }
    return left;
  }

  private factor(): Filter {
    const token = this.peek();
    if (token?.kind === '(') {
      this.pos++;
      const inner = this.nested(() => this.or());
      this.expect(')', '")"');
      return inner;
    }
    // `not` takes a parenthesised filter only; `not userName eq "x"` is not in the grammar.
    if (this.isWord(token, 'not') && this.tokens[this.pos + 1]?.kind === '(') {
      this.pos += 2;
      const inner = this.nested(() => this.or());
      this.expect(')', '")"');
      return { op: 'not', filter: inner };
    }
    return this.attributeExpression();
  }

  private attributeExpression(): Filter {
    const token = this.expect('word', 'an attribute path');
    if (!ATTR_PATH.test(token.text)) throw invalidFilter(`${shown(token.text)} at position ${token.at} is not an attribute path`);
    const path = token.text;
    if (this.peek()?.kind === '[') return this.valuePath(path);
    const opToken = this.expect('word', `an operator after ${shown(path)}`);
    const op = opToken.text.toLowerCase();
    if (op !== 'pr' && !COMPARE_OPS.has(op)) throw invalidFilter(`Unknown operator ${shown(opToken.text)} at position ${opToken.at}`);
    if (++this.comparisons > MAX_FILTER_COMPARISONS) throw invalidFilter(`The filter has more than ${MAX_FILTER_COMPARISONS} comparisons`);
    if (op === 'pr') return { op: 'pr', path };
    return { op: op as CompareOp, path, value: this.literal() };
  }

  /**
   * `attr[filter]`; value filters do not nest. RFC 7644's filter grammar has
   * no `attr[filter].sub op value`, but Entra ID sends it to match users by
   * address (`emails[type eq "work"].value eq "a@b.c"`): it is read as
   * `attr[filter and sub op value]`, one value meeting both.
   */
  private valuePath(path: string): Filter {
    const open = this.expect('[', '"["');
    if (this.inValuePath) throw invalidFilter(`Value filters do not nest (position ${open.at})`);
    this.inValuePath = true;
    const inner = this.nested(() => this.or());
    this.inValuePath = false;
    this.expect(']', '"]"');
    const next = this.peek();
    if (next?.kind === 'word' && next.text.startsWith('.')) {
      const sub = next.text.slice(1);
      if (!/^[A-Za-z][\w$-]*$/.test(sub)) throw invalidFilter(`${shown(`${path}[...]${next.text}`)} is not an attribute path`);
      this.pos++;
      const opToken = this.expect('word', `an operator after ${shown(`${path}[...]${next.text}`)}`);
      const op = opToken.text.toLowerCase();
      if (op !== 'pr' && !COMPARE_OPS.has(op)) throw invalidFilter(`Unknown operator ${shown(opToken.text)} at position ${opToken.at}`);
      if (++this.comparisons > MAX_FILTER_COMPARISONS) throw invalidFilter(`The filter has more than ${MAX_FILTER_COMPARISONS} comparisons`);
      const right: Filter = op === 'pr' ? { op: 'pr', path: sub } : { op: op as CompareOp, path: sub, value: this.literal() };
      return { op: 'value', path, filter: { op: 'and', left: inner, right } };
    }
    return { op: 'value', path, filter: inner };
  }

  /** A JSON value: string, number, true, false or null (the last three in any case, as some clients send `True`). */
  private literal(): Literal {
    const token = this.tokens[this.pos++];
    if (token?.kind === 'string') return token.value!;
    if (token?.kind !== 'word') throw invalidFilter(`Expected a value ${token ? `at position ${token.at}` : 'at the end'}`);
    const word = token.text.toLowerCase();
    if (word === 'true' || word === 'false') return word === 'true';
    if (word === 'null') return null;
    if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(token.text) && Number.isFinite(Number(token.text))) return Number(token.text);
    throw invalidFilter(`${shown(token.text)} at position ${token.at} is not a value: strings are quoted`);
  }
}

/** Parses a SCIM filter; any syntax error, or a filter beyond the limits above, is a 400 invalidFilter. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw invalidFilter(`The filter is longer than ${MAX_FILTER_LENGTH} characters`);
  const tokens = tokenize(text);
  if (tokens.length === 0) throw invalidFilter('The filter is empty');
  return new Parser(tokens).parse();
}
