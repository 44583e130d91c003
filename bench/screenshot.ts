// Renders a bench report in headless Chromium: PNG screenshots at a desktop and a laptop
// width, and a check, in the browser, that no text overflows its room.
//
//   npm run build && node dist/bench/screenshot.js [REPORT.html] [--out DIR] [--sizes 1920x1080,1366x768]
//        [--check-widths 1280,1366,1920] [--viewport-only]
//
// REPORT defaults to bench/results/latest.html; the PNGs go to DIR (default
// bench/results/screenshots/), one of the whole page and one of the first screen per size:
// <name>-<W>x<H>-full.png and <name>-<W>x<H>.png. Chromium is Debian's `chromium` (or
// `chromium-browser`, or $CHROMIUM); `apt-get install -y chromium` when missing.
//
// The check: a copy of the page with a small script added (the report itself has none) is
// laid out at each width and its DOM dumped (--dump-dom); the script writes what it found
// into the DOM. It reports:
// - an SVG text longer than the room its chart gave it (data-maxw, measured with
//   getComputedTextLength), or reaching outside its SVG;
// - two SVG texts of one chart that overlap;
// - an element whose content is wider than its box (scrollWidth > clientWidth), a box that
//   reaches past the window's right edge, or a page that scrolls sideways.
// Exit status 1 when anything is found.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** Runs in the page (as text: it never runs in node). Writes its findings into #layout-check. */
const CHECK = `
(() => {
  const problems = [];
  const W = window.innerWidth;
  const where = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      const h = e.querySelector && e.querySelector(':scope > h3, :scope > figcaption');
      if (h) { parts.push(h.textContent.slice(0, 80)); break; }
    }
    return parts.join(' / ');
  };
  const doc = document.documentElement;
  if (doc.scrollWidth > W + 1) problems.push({ kind: 'page scrolls sideways', width: doc.scrollWidth, window: W });
  let texts = 0;
  for (const svg of document.querySelectorAll('main svg')) {
    if (svg.classList.contains('sw')) continue;
    const box = svg.getBoundingClientRect();
    const scale = box.width / (svg.viewBox.baseVal.width || box.width || 1);
    if (scale < 0.999) problems.push({ kind: 'chart scaled down', chart: svg.getAttribute('aria-label'), scale: Math.round(scale * 1000) / 1000 });
    const rects = [];
    for (const t of svg.querySelectorAll('text')) {
      texts++;
      const s = t.textContent;
      const len = t.getComputedTextLength();
      const maxw = t.getAttribute('data-maxw');
      if (maxw !== null && len > Number(maxw) + 0.5) problems.push({ kind: 'text longer than its room', text: s, width: Math.round(len), room: Number(maxw), chart: svg.getAttribute('aria-label') });
      const r = t.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
        problems.push({ kind: 'text outside its chart', text: s, chart: svg.getAttribute('aria-label'), text_box: [r.left, r.top, r.right, r.bottom].map(Math.round), chart_box: [box.left, box.top, box.right, box.bottom].map(Math.round) });
      rects.push([s, r]);
    }
    // overlaps: the boxes shrunk by 2 px (lines of one label touch)
    for (let i = 0; i < rects.length; i++)
      for (let j = i + 1; j < rects.length; j++) {
        const a = rects[i][1], b = rects[j][1];
        if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2)
          problems.push({ kind: 'texts overlap', a: rects[i][0], b: rects[j][0], chart: svg.getAttribute('aria-label') });
      }
  }
  let boxes = 0;
  for (const el of document.querySelectorAll('main *')) {
    if (el.closest('svg')) continue;
    boxes++;
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) problems.push({ kind: 'content wider than its box', element: el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''), text: el.textContent.slice(0, 80), content: el.scrollWidth, box: el.clientWidth, in: where(el) });
    const r = el.getBoundingClientRect();
    if (r.right > W + 0.5) problems.push({ kind: 'box past the right edge', element: el.tagName.toLowerCase(), text: el.textContent.slice(0, 80), right: Math.round(r.right), window: W });
  }
  const out = document.createElement('pre');
  out.id = 'layout-check';
  out.textContent = JSON.stringify({ window: [W, window.innerHeight], height: doc.scrollHeight, texts, boxes, problems });
  document.body.appendChild(out);
})();
`;

function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'].filter((x): x is string => !!x);
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error('no Chromium: install it with `apt-get install -y chromium` (Debian), or set CHROMIUM');
  return found;
}

function chromium(bin: string, args: string[], profile: string): Promise<string> {
  const base = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--no-first-run', '--disable-extensions', '--disable-background-networking', '--mute-audio', `--user-data-dir=${profile}`, '--force-device-scale-factor=1'];
  return new Promise((res, rej) =>
    execFile(bin, [...base, ...args], { maxBuffer: 64 * 2 ** 20, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) rej(new Error(`chromium failed: ${err.message}\n${String(stderr).split('\n').slice(-5).join('\n')}`));
      else res(stdout);
    }),
  );
}

interface CheckResult {
  window: [number, number];
  height: number;
  texts: number;
  boxes: number;
  problems: Array<Record<string, unknown>>;
}

/** Lays the page out at width x height and returns what the check script found. */
export async function checkLayout(bin: string, page: string, width: number, height: number, profile: string): Promise<CheckResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-check-'));
  try {
    const copy = join(dir, 'page.html');
    writeFileSync(copy, readFileSync(page, 'utf8').replace('</body>', `<script>window.addEventListener('load', () => {${CHECK}});</script></body>`));
    const dom = await chromium(bin, [`--window-size=${width},${height}`, '--virtual-time-budget=5000', '--dump-dom', `file://${copy}`], profile);
    const m = /<pre id="layout-check">([^<]*)<\/pre>/.exec(dom);
    if (!m) throw new Error('the check script left no result (did the page load?)');
    const text = m[1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    return JSON.parse(text) as CheckResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name: string) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : undefined);
  const page = resolve(args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')) ?? join(ROOT, 'bench', 'results', 'latest.html'));
  const outDir = resolve(opt('out') ?? join(ROOT, 'bench', 'results', 'screenshots'));
  const sizes = (opt('sizes') ?? '1920x1080,1366x768').split(',').map((s) => s.split('x').map(Number) as [number, number]);
  const checkWidths = (opt('check-widths') ?? '1280,1366,1920').split(',').map(Number);
  const bin = chromiumPath();
  mkdirSync(outDir, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'bench-chromium-'));
  let bad = 0;
  try {
    const heights = new Map<number, number>();
    for (const w of [...new Set([...checkWidths, ...sizes.map((s) => s[0])])].sort((a, b) => a - b)) {
      const r = await checkLayout(bin, page, w, 900, profile);
      heights.set(w, r.height);
      if (r.window[0] !== w) console.log(`  note: Chromium laid the page out ${r.window[0]} px wide for --window-size ${w}`);
      console.log(`${w} px: ${r.texts} chart texts and ${r.boxes} boxes checked, page ${r.height} px tall: ${r.problems.length ? `${r.problems.length} problem(s)` : 'nothing overflows'}`);
      for (const p of r.problems.slice(0, 40)) console.log(`  ${JSON.stringify(p)}`);
      bad += r.problems.length;
    }
    const name = basename(page, '.html');
    for (const [w, h] of sizes) {
      const first = join(outDir, `${name}-${w}x${h}.png`);
      await chromium(bin, [`--window-size=${w},${h}`, '--virtual-time-budget=3000', `--screenshot=${first}`, `file://${page}`], profile);
      console.log(`${first} (${Math.round(statSync(first).size / 1024)} KB)`);
      if (args.includes('--viewport-only')) continue;
      const full = join(outDir, `${name}-${w}x${h}-full.png`);
      await chromium(bin, [`--window-size=${w},${Math.max(h, heights.get(w) ?? h)}`, '--virtual-time-budget=3000', `--screenshot=${full}`, `file://${page}`], profile);
      console.log(`${full} (${Math.round(statSync(full).size / 1024)} KB)`);
    }
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
  if (bad) {
    console.log(`\n${bad} layout problem(s): see above`);
    process.exit(1);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(2);
  });
}
