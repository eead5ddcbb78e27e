// Preloaded with `node --require` in front of server-everything's streamableHttp mode, which calls
// app.listen(PORT) with no host and so would bind every interface. This pins any listen() that names no
// host to 127.0.0.1, and prints the port actually bound (PORT=0 lets the OS pick one: no race for a port).
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const port = Number(args[0]);
    const rest = args.slice(1);
    if (typeof rest[0] !== "string") {  // no host given: loopback only
      args = [port, "127.0.0.1", ...rest];
    }
  } else if (args[0] && typeof args[0] === "object" && args[0].host === undefined && args[0].path === undefined) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`loopback-listening ${address.address} ${address.port}\n`);
    }
  });
  return listen.apply(this, args);
};
