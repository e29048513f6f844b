// Trends: a small inline SVG line of a numeric channel's recent values (docs/console.md "Trends"),
// from the asset's history (GET /services/assets/{name}/_history, docs/rest-api.md "History").
// No chart library; drawn with SVG attributes and the style sheet's classes only (the page's CSP
// has no inline style).

const NS = 'http://www.w3.org/2000/svg';
const W = 120;
const H = 28;
const PAD = 2;

export interface Sample { timestamp: number; value: number }

const svg = <K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] => {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
};

/** An empty sparkline for `channel`; `draw` fills it with samples. */
export function sparkline(channel: string): { el: SVGSVGElement; draw(samples: Sample[]): void } {
  const el = svg('svg', { class: 'spark', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': `Trend of ${channel}: no values yet` });
  const title = svg('title', {});
  el.appendChild(title);
  const line = svg('polyline', { class: 'spark-line', points: '' });
  const dot = svg('circle', { class: 'spark-dot', r: 2, cx: -10, cy: -10 });
  el.append(line, dot);
  return {
    el,
    draw(samples) {
      const xs = samples.filter((s) => typeof s.value === 'number' && Number.isFinite(s.value));
      if (xs.length === 0) {
        line.setAttribute('points', '');
        el.setAttribute('aria-label', `Trend of ${channel}: no values yet`);
        title.textContent = 'No values yet';
        el.setAttribute('data-points', '0');
        return;
      }
      let lo = Infinity;
      let hi = -Infinity;
      for (const s of xs) [lo, hi] = [Math.min(lo, s.value), Math.max(hi, s.value)];
      const t0 = xs[0]!.timestamp;
      const span = Math.max(1, xs[xs.length - 1]!.timestamp - t0);
      const x = (t: number) => (xs.length === 1 ? W - PAD : PAD + ((t - t0) / span) * (W - 2 * PAD));
      // A flat line sits in the middle; otherwise the lowest value at the bottom, the highest at the top.
      const y = (v: number) => (hi === lo ? H / 2 : H - PAD - ((v - lo) / (hi - lo)) * (H - 2 * PAD));
      const pts = xs.map((s) => `${x(s.timestamp).toFixed(1)},${y(s.value).toFixed(1)}`);
      line.setAttribute('points', pts.join(' '));
      const last = xs[xs.length - 1]!;
      dot.setAttribute('cx', x(last.timestamp).toFixed(1));
      dot.setAttribute('cy', y(last.value).toFixed(1));
      const text = `${xs.length} values from ${new Date(t0).toLocaleTimeString()}: min ${lo}, max ${hi}, last ${last.value}`;
      title.textContent = text;
      el.setAttribute('aria-label', `Trend of ${channel}: ${text}`);
      el.setAttribute('data-points', String(xs.length));
    },
  };
}
