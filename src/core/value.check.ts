import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { TObject } from '@sinclair/typebox';

// Values judged by the API's own field schemas outside a request: a row of
// an imported file or of a RuoYi source (docs/migrate-from-ruoyi.md) is refused for
// what a request carrying it would be refused for.

const ajv = addFormats.default(new Ajv.default({ allErrors: false, strict: false }));

/** A check of one object of values against `schema`: the first refusal as a sentence, or undefined. */
export function valueChecker(schema: TObject): (values: Record<string, unknown>) => string | undefined {
  const validate = ajv.compile(schema);
  return (values) => {
    if (validate(values)) return undefined;
    const error = validate.errors![0]!;
    const field = error.instancePath.replace(/^\//, '') || String(error.params.missingProperty ?? '');
    return `${field} ${JSON.stringify(values[field])} would be refused: ${error.message}`;
  };
}
