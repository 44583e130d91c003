// A minimal admission webhook server for the bench (cpu-cost --webhooks): /mutate answers with
// a JSON patch that adds one label, /validate allows. Its own process, so that its CPU is
// counted neither as the API server's nor as the load client's.
//
//   node dist/bench/webhook-server.js KEY CERT   (prints "listening <port>")
import https from 'node:https';
import { readFileSync } from 'node:fs';

const [key, cert] = process.argv.slice(2);
const patch = Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/labels', value: { 'bench-webhook': 'yes' } }])).toString('base64');
const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const mutate = (req.url ?? '').startsWith('/mutate');
    const response = mutate ? { uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch } : { uid: review.request.uid, allowed: true };
    const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
let connections = 0;
let requests = 0;
server.on('secureConnection', () => connections++);
server.on('request', () => requests++);
// the connections made and calls served, on stderr when asked (WEBHOOK_BENCH_STATS=1)
if (process.env.WEBHOOK_BENCH_STATS) setInterval(() => console.error(`webhook-server: ${connections} connections, ${requests} calls, cpu ${JSON.stringify(process.cpuUsage())}`), 1000).unref();
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  console.log(`listening ${typeof a === 'object' && a ? a.port : 0}`);
});
