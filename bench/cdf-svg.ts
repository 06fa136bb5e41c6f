// A latency CDF as a small standalone SVG: one line per backend, log-scaled milliseconds.
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

export function cdfSvg(title: string, series: Record<string, readonly number[]>): string {
  const [w, h, left, right, top, bottom] = [720, 430, 60, 40, 56, 50];
  const all = Object.values(series).flat().filter((v) => v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...all))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all))));
  const x = (v: number) => left + ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (w - left - right);
  const y = (q: number) => h - bottom - q * (h - top - bottom);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<rect width="${w}" height="${h}" fill="white"/>`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`,
  ];
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    parts.push(`<line x1="${x(d)}" y1="${y(0)}" x2="${x(d)}" y2="${y(1)}" stroke="#ddd"/>`);
    parts.push(`<text x="${x(d)}" y="${y(0) + 16}" text-anchor="middle">${d >= 1 ? d : d.toPrecision(1)} ms</text>`);
  }
  // p99 sits too close to p95 to label both on a linear axis; the grid line still shows it.
  for (const [q, label] of [[0, '0'], [0.25, 'p25'], [0.5, 'p50'], [0.75, 'p75'], [0.95, 'p95'], [0.99, '']] as const) {
    parts.push(`<line x1="${left}" y1="${y(q)}" x2="${w - right}" y2="${y(q)}" stroke="#eee"/>`);
    if (label !== '') parts.push(`<text x="${left - 6}" y="${y(q) + 4}" text-anchor="end">${label}</text>`);
  }
  Object.entries(series).forEach(([name, samples], i) => {
    const sorted = [...samples].sort((a, b) => a - b);
    const points = sorted.map((v, k) => `${x(v).toFixed(1)},${y((k + 1) / sorted.length).toFixed(1)}`).join(' ');
    const color = COLORS[i % COLORS.length];
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points}"/>`);
    // Legend in a row between the title and the plot, where no line can cover it.
    const [lx, ly] = [left + i * 190, 30];
    parts.push(`<rect x="${lx}" y="${ly}" width="12" height="12" fill="${color}"/>`);
    parts.push(`<text x="${lx + 18}" y="${ly + 10}">${name} (n=${sorted.length})</text>`);
  });
  parts.push(`<text x="${w / 2}" y="${h - 8}" text-anchor="middle">primary CNI's rename → patched file landed (log scale)</text>`, '</svg>');
  return `${parts.join('\n')}\n`;
}
