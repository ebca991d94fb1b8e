// Webhook receivers for the delivery benchmark, in a process of their own: answers 204 at once,
// counts deliveries, and records for each the time since its event was sent (data.sentAt).
import { createServer } from 'node:http';

let count = 0;
let first = 0;
let last = 0;
const latencies = [];
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const now = Date.now();
    count++;
    if (first === 0) first = now;
    last = now;
    const sentAt = JSON.parse(body).data?.sentAt;
    if (typeof sentAt === 'number') latencies.push(now - sentAt);
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (message) => {
  if (message === 'report') process.send({ count, first, last, latencies });
  if (message === 'reset') {
    count = 0;
    first = 0;
    last = 0;
    latencies.length = 0;
  }
});
