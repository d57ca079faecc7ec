// A real OpenID Provider (oidc-provider, certified) on a loopback port, for
// tests/sso.test.ts, run as a child process by tests/support/oidc/provider.ts
// (under Node 22+ where there is one: the provider's current major wants it):
//   OP_CONFIG='<json>' node tests/support/oidc/op.mjs
// OP_CONFIG: { port, keys: [private JWK...], clients: [{client_id, client_secret, redirect_uris}], accounts: {id: claims},
// publishedKeys?: [public JWK...] }. The first key signs. With publishedKeys, the provider's key set
// (its jwks_uri, /jwks) answers those instead of the signing keys: a provider whose published keys do not
// verify its tokens. Prints "ready <port>" once listening; stops on SIGTERM.
//
// No browser: interactions are finished by a test-only route the test's
// fetch follows, /interaction/<uid>/login?account=<id> (or /deny, which
// answers the client error=access_denied), through the provider's own
// interaction and Grant APIs.
import { createServer } from 'node:http';
import { URL } from 'node:url';
import Provider from 'oidc-provider';

const { port, keys, clients, accounts, publishedKeys } = JSON.parse(process.env.OP_CONFIG ?? '{}');
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: clients.map((c) => ({
    ...c,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  jwks: { keys },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  claims: { openid: ['sub', 'oid', 'tid', 'name'], email: ['email', 'email_verified'] },
  scopes: ['openid', 'email', 'profile'],
  // The claims of the scopes asked for go in the ID token itself (the relying party reads no userinfo).
  conformIdTokenClaims: false,
  async findAccount(_ctx, sub) {
    const claims = accounts[sub];
    return claims && { accountId: sub, claims: async () => ({ sub, ...claims }) };
  },
  cookies: { keys: ['op-test-cookie-key'] },
});
provider.on('server_error', (_ctx, err) => console.error('OP server_error', err));

const handle = provider.callback();
const server = createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  if (publishedKeys && url.pathname === '/jwks') {
    res.setHeader('content-type', 'application/json');
    return res.end(JSON.stringify({ keys: publishedKeys }));
  }
  const match = /^\/interaction\/([^/]+)\/(login|deny)$/.exec(url.pathname);
  if (!match) return handle(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    if (match[2] === 'deny') {
      return await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The person said no' },
        { mergeWithLastSubmission: false },
      );
    }
    const accountId = url.searchParams.get('account');
    const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    const grantId = await grant.save();
    return await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  } catch (err) {
    res.statusCode = 400;
    res.end(String(err));
  }
});
server.listen(port, '127.0.0.1', () => console.log(`ready ${server.address().port}`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
