// Preloaded (`node --import`) into a server that listens on every interface when given only a port
// (@modelcontextprotocol/server-everything's `app.listen(PORT)`): such a listen binds 127.0.0.1 instead, so the
// bench's MCP server is reachable on loopback only. A listen that names its host is left as it is.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portOnly = typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]));
  if (portOnly && (args.length === 1 || typeof args[1] === 'function')) args.splice(1, 0, '127.0.0.1');
  return listen.apply(this, args);
};
