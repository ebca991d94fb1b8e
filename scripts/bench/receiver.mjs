// Webhook receivers for the delivery measures, in a process of their own: answers 204 at once,
// keeps the arrival time of every delivery (for the drain rate between two of them) and, for
// events stamped with data.sentAt by the bench, the time from publishing to arrival.
import { createServer } from 'node:http';

let arrivals = [];
let latencies = [];
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    arrivals.push(performance.now());
    const sentAt = JSON.parse(body).data?.sentAt;
    if (typeof sentAt === 'number') latencies.push(Date.now() - sentAt);
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (message) => {
  if (message.type === 'count') process.send({ count: arrivals.length });
  if (message.type === 'arrivals') process.send({ times: message.at.map((n) => arrivals[n - 1] ?? null) });
  if (message.type === 'latencies') process.send({ latencies });
  if (message.type === 'reset') {
    arrivals = [];
    latencies = [];
    process.send({ reset: true });
  }
});
