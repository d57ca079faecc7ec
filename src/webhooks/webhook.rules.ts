import { AppError } from '../core/app.error.js';
import { AddressRuleError, checkLiteral, type AddressRule } from './webhook.address.js';

/**
 * Rule (when an endpoint is saved): an http(s) URL without a fragment or credentials;
 * http:// only where WEBHOOK_ALLOWED_CIDRS lets some address in; an IP
 * literal must pass the address rule now. A hostname is judged on every
 * connection instead (its address can change), so saving one that resolves
 * to a refused address is allowed and each attempt fails, logged.
 */
export function assertReceiverUrl(rule: AddressRule, text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError(400, `url "${text}" is not a valid URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AppError(400, `url must be https:// (got ${url.protocol})`);
  if (url.protocol === 'http:' && !rule.allowed)
    throw new AppError(400, 'url must be https:// (http:// is allowed only to addresses in WEBHOOK_ALLOWED_CIDRS, and none are set)');
  if (url.hash) throw new AppError(400, 'url must not have a #fragment');
  // The URL is shown to every admin who can read the endpoint and its audit records: no secrets in it.
  if (url.username || url.password)
    throw new AppError(400, 'url must not carry a user or password: receivers authenticate deliveries by their signature');
  try {
    checkLiteral(rule, url);
  } catch (err) {
    if (err instanceof AddressRuleError) throw new AppError(400, `url refused: ${err.message}`);
    throw err;
  }
}
