// Preloaded with `node --require` in front of the conformance runner, whose scenario servers call
// server.listen(0) with no host (which binds every interface) and then read server.address() at once.
// Passing a host would make listen() resolve it asynchronously, so address() would still be null; instead
// this binds a TCP handle to 127.0.0.1 itself and listens on that, which is synchronous. A listen naming a
// host other than loopback is refused. Each bind is printed so the test can assert what was bound.
"use strict";
const net = require("node:net");
const { TCP, constants } = process.binding("tcp_wrap");
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  let port = null;
  if ((typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0])))) {
    if (typeof args[1] === "string" && !LOOPBACK.has(args[1])) throw new Error(`refusing to bind ${args[1]}`);
    port = Number(args.shift());
    if (typeof args[0] === "string") args.shift();
  } else if (args[0] && typeof args[0] === "object" && args[0].port !== undefined && args[0].path === undefined) {
    const host = args[0].host;
    if (host !== undefined && !LOOPBACK.has(host)) throw new Error(`refusing to bind ${host}`);
    port = Number(args.shift().port);
  }
  if (port !== null) {
    const handle = new TCP(constants.SERVER);
    const err = handle.bind("127.0.0.1", port);
    if (err) throw new Error(`binding 127.0.0.1:${port} failed (${err})`);
    args = [handle, ...args.filter((a) => typeof a === "function")];
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`loopback-listening ${address.address} ${address.port}\n`);
    }
  });
  return listen.apply(this, args);
};
