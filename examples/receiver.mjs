#!/usr/bin/env node
// A webhook receiver, as a customer would write one: verifies each delivery's Standard Webhooks
// signature with the `standardwebhooks` package, then answers 204. With RECEIVER_TOKEN, it stands
// behind its own authentication as well: a request without `Authorization: Bearer <token>` is
// answered 401 (the webhook's custom headers carry it, docs/api.md).
//   [RECEIVER_TOKEN=...] WEBHOOK_SECRET=whsec_... node examples/receiver.mjs [port]
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const port = Number(process.argv[2] ?? 4000);
const webhook = new Webhook(process.env.WEBHOOK_SECRET ?? '');
const token = process.env.RECEIVER_TOKEN;

createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
      console.log(`refused ${req.headers['webhook-id']}: no Authorization: Bearer with the token`);
      return res.writeHead(401).end();
    }
    try {
      // Checks the signature and rejects timestamps more than five minutes off.
      const event = webhook.verify(body, req.headers);
      console.log(`verified ${req.headers['webhook-id']}: ${JSON.stringify(event)}`);
      res.writeHead(204).end();
    } catch (error) {
      console.log(`rejected: ${error.message}`);
      res.writeHead(400).end();
    }
  });
}).listen(port, '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}/`));
