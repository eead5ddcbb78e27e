// A real OpenID provider (the npm package oidc-provider, pinned 9.13.3) configured as the authorization server of
// the bundled demo MCP server: tests get real codes and tokens from it, and `mcp-console demo --oauth` shows a
// real OAuth flow. It is a test and demo tool: every login is accepted, state lives in memory, keys are made per start.
//
//   node provider.mjs --port 0 --resource http://127.0.0.1:8766/mcp [--resource …] [--token-ttl 60]
//
// Every option can come from the environment instead (the launcher, app/demo/oauth_provider, uses that):
//   OIDC_PORT, OIDC_RESOURCES (space-separated), OIDC_TOKEN_TTL (seconds),
//   OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_CLIENT_REDIRECT_URIS (space-separated): an optional pre-registered client.
// Where oidc-provider is installed: NODE_PATH does not apply to ESM imports, so the launcher passes the
// node_modules directory as OIDC_NODE_MODULES and this file imports from there.
//
// Prints exactly one line to stderr once it listens: `oidc provider listening on http://127.0.0.1:PORT`.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const HOST = '127.0.0.1';
const SCOPES = ['openid', 'offline_access', 'mcp:read', 'mcp:write'];
const RESOURCE_SCOPE = 'mcp:read mcp:write';

function settings() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      resource: { type: 'string', multiple: true },
      'token-ttl': { type: 'string' },
    },
  });
  const env = process.env;
  const words = (text) => (text || '').split(/[\s,]+/).filter(Boolean);
  const resources = values.resource?.length ? values.resource : words(env.OIDC_RESOURCES);
  const port = Number(values.port ?? env.OIDC_PORT ?? 0);
  const tokenTtl = Number(values['token-ttl'] ?? env.OIDC_TOKEN_TTL ?? 300);
  if (!resources.length) fail('name at least one MCP resource URI (--resource or OIDC_RESOURCES)');
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`not a port: ${port}`);
  if (!Number.isInteger(tokenTtl) || tokenTtl < 1) fail(`the access-token TTL must be whole seconds >= 1: ${tokenTtl}`);
  const client = env.OIDC_CLIENT_ID ? {
    client_id: env.OIDC_CLIENT_ID,
    client_secret: env.OIDC_CLIENT_SECRET || undefined,
    // A native client's loopback redirect URIs match on any port (RFC 8252 §7.3), so one entry covers every console.
    application_type: 'native',
    redirect_uris: words(env.OIDC_CLIENT_REDIRECT_URIS || 'http://127.0.0.1/oauth/callback http://localhost/oauth/callback'),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: env.OIDC_CLIENT_SECRET ? 'client_secret_basic' : 'none',
  } : undefined;
  return { resources, port, tokenTtl, client };
}

function fail(message) {
  process.stderr.write(`oidc provider: ${message}\n`);
  process.exit(2);
}

// Signing keys live in memory for one run: the package's built-in development keys would be the same for everyone,
// and a new key per start also shows a client that caches a JWKS across restarts of its server.
function signingKeys() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' }] };
}

function configuration({ resources, tokenTtl, client }) {
  return {
    clients: client ? [client] : [],
    jwks: signingKeys(),
    cookies: { keys: [randomBytes(32).toString('hex')] },
    scopes: SCOPES,
    pkce: { required: () => true },
    // Every login is an account; its only claim is its name.
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    // A refresh token for every client allowed the grant: the default also wants `offline_access` granted, which
    // oidc-provider keeps only with prompt=consent — a detail of this package, not of the MCP flow under test.
    issueRefreshToken: async (_ctx, client_) => client_.grantTypeAllowed('refresh_token'),
    // Set rather than defaulted: each default prints a notice on first use, which would bury the ready line.
    ttl: {
      AccessToken: tokenTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 24 * 3600,
      Interaction: 3600,
      Session: 3600,
      Grant: 24 * 3600,
    },
    // The console talks to the token endpoint from its backend; a browser page never does.
    clientBasedCORS: () => true,
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // No `resource` in the request: none is assumed, so a client that forgets it (a MUST in MCP) gets an
        // opaque userinfo token the demo refuses, instead of a working token that hides the bug. When a grant
        // holds several, the first is taken.
        defaultResource: async (_ctx, _client, oneOf) => (Array.isArray(oneOf) ? oneOf[0] : oneOf),
        // A refresh or code exchange without `resource` keeps the one granted.
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (!resources.includes(indicator)) {
            throw new errors.InvalidTarget(`unknown resource ${indicator}; this provider serves ${resources.join(', ')}`);
          }
          return {
            scope: RESOURCE_SCOPE,
            audience: indicator,
            accessTokenFormat: 'jwt',
            accessTokenTTL: tokenTtl,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  };
}

const config = settings();
const modules = process.env.OIDC_NODE_MODULES;
const entry = modules ? pathToFileURL(join(modules, 'oidc-provider', 'lib', 'index.js')).href : 'oidc-provider';
const { default: Provider, errors } = await import(entry);

// Bound first, so port 0 works: the issuer has to name the real port, and it is known only once bound.
const server = createServer();
server.on('error', (err) => fail(`cannot listen on ${HOST}:${config.port}: ${err.message}`));
server.listen(config.port, HOST, () => {
  const issuer = `http://${HOST}:${server.address().port}`;
  const provider = new Provider(issuer, configuration(config));
  // Errors of the provider itself (not a client's bad request): one line, never a request's parameters or tokens.
  provider.on('server_error', (_ctx, err) => process.stderr.write(`oidc provider error: ${err.message}\n`));
  server.on('request', provider.callback());
  process.stderr.write(`oidc provider listening on ${issuer}\n`);
});

function shutdown() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
