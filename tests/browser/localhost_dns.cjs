// Preloaded into Playwright's Node driver (NODE_OPTIONS=--require) so that `page.request` resolves *.localhost
// to loopback as Chromium itself does (RFC 6761). glibc here does not, and the console lives at mcp-….localhost.
const dns = require("dns");
const original = dns.promises.lookup.bind(dns.promises);
dns.promises.lookup = (hostname, options) => {
  if (typeof hostname === "string" && hostname.toLowerCase().endsWith(".localhost")) {
    const family = options && options.family === 6 ? 6 : 4;
    const address = { address: family === 6 ? "::1" : "127.0.0.1", family };
    return Promise.resolve(options && options.all ? [address] : address);
  }
  return original(hostname, options);
};
