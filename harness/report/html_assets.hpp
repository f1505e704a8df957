// The HTML report's inline stylesheet and script: constants, no input data, no network.
#pragma once

namespace attngate::html_assets {

inline constexpr const char *kStyle = R"CSS(
body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 40px;color:#1d2330;background:#fff}
h1{margin:18px 0 6px;font-size:22px} h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #dde}
.verdict{padding:10px 18px;border-radius:6px;margin:10px 0;color:#fff;display:flex;flex-wrap:wrap;align-items:center;gap:6px 18px}
.verdict table.counts{margin:0;font-size:12px} .verdict table.counts td,.verdict table.counts th{padding:1px 7px}
.verdict.fail{background:#b3261e} .verdict.pass{background:#1e7d3a}
.verdict th{background:rgba(255,255,255,.18);color:#fff;cursor:default} .verdict td{border-color:rgba(255,255,255,.5)}
.verdict .big{font-size:26px;font-weight:700;margin-right:14px}
table{border-collapse:collapse;margin:6px 0} th,td{border:1px solid #d6d9e0;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eef0f5;cursor:pointer;user-select:none} th[data-dir=asc]::after{content:" ▲"} th[data-dir=desc]::after{content:" ▼"}
tr.fail td{background:#fde7e7} tr.fail td:first-child{border-left:4px solid #b3261e} tr.skip td{color:#777}
tr.error td{background:#f3e5f5} tr.error td:first-child{border-left:4px solid #6a1b9a}
.v{font-weight:700} .v.fail{color:#b3261e} .v.pass{color:#1e7d3a} .v.skip{color:#777} .v.error{color:#6a1b9a}
td.num,.mono{font-family:ui-monospace,monospace;font-size:12px}
.controls{margin:8px 0} .controls input[type=search]{padding:4px 8px;width:280px}
details.case{border:1px solid #d6d9e0;border-radius:6px;margin:8px 0;padding:6px 12px} details.case.fail{border-color:#b3261e}
details.case.error{border-color:#6a1b9a}
details.case summary{cursor:pointer;font-weight:600} .check{margin:10px 0 4px 0}
.figs{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
svg .ax{font-size:10px;fill:#444} svg .line{fill:none;stroke:#3060c0;stroke-width:1.5} svg circle{fill:#3060c0}
svg .ref{stroke:#b3261e;stroke-dasharray:4 3} svg circle.s1{fill:#999} svg .med{stroke:#111;stroke-width:2}
svg .base{stroke:#888;stroke-width:1.5} svg .ci{stroke:#3060c0;stroke-width:5;stroke-linecap:round} svg circle.ratio{fill:#111}
svg .bar{fill:#3060c0} svg .bar.b1{fill:#999}
svg .cp{stroke:#b3261e;stroke-width:1.5;stroke-dasharray:5 3} svg .cp-label{font-size:11px;font-weight:700;fill:#b3261e}
svg line.fp{stroke:#7a4b00;stroke-dasharray:2 2} svg path.fp{fill:#e0a030}
table.trends td.drift{color:#b3261e;font-weight:700}
.changes li.changed{color:#7a4b00} .changes li.added{color:#1e5d3a} .changes li.removed{color:#8a1c1c}
.note{color:#666;font-style:italic}
#groups{margin:4px 0 8px;padding-left:22px} #groups>li{margin:2px 0} #groups summary{cursor:pointer}
#groups ul{margin:4px 0 8px;font-size:12px} #groups .num{font-family:ui-monospace,monospace;color:#555}
table.matrix{font-size:12px} table.matrix th.kernel{cursor:default;max-width:130px;overflow-wrap:anywhere}
table.matrix tr.feature th{background:#f6f7fa;font-weight:600;color:#445;cursor:default;padding:1px 7px}
table.matrix td{padding:2px 5px} table.matrix td.case{font-family:ui-monospace,monospace}
table.matrix td.mcell.none{color:#bbb;text-align:center} a.mc{display:inline-flex;gap:2px;text-decoration:none}
.ck{display:inline-block;min-width:16px;height:16px;line-height:16px;text-align:center;border-radius:3px;font:600 10px ui-monospace,monospace;color:#fff}
.ck.pass{background:#2e9d4f} .ck.fail{background:#c62828} .ck.error{background:#6a1b9a} .ck.skip{background:#c9ccd3;color:#555}
.ck.changed{background:#e0a030;color:#222} .ck.blank{background:none} a.mc:hover .ck{outline:2px solid #1d2330}
.legend{font-size:12px;color:#444;margin:4px 0} .legend .ck{vertical-align:middle}
details.case:target{outline:3px solid #3060c0}
)CSS";

inline constexpr const char *kScript = R"JS(
(function () {
  var SVG = 'http://www.w3.org/2000/svg';
  var node = document.getElementById('row-data');
  var D = node ? JSON.parse(node.textContent) : {rows: [], strings: [], rank: {}, checks: [], metric_names: [], key_names: [], heat_colours: []};
  function str(i) { return D.strings[i]; }
  // The rows as html_row_data packs them (arrays, repeated strings by index), unpacked.
  var ROWS = D.rows.map(function (r, i) {
    return {i: i, kase: str(r[0]), kernel: str(r[1]), verdict: r[2], params: str(r[3]), version: str(r[4]), seconds: r[5], trends: r[7],
            checks: r[6].map(function (k) {
              var names = D.metric_names[k[0]];
              function m(name) { var v = k[3][names.indexOf(name)]; return v === null || v === undefined ? '-' : v; }
              var key = D.key_names[k[0]].filter(function (n) { return m(n) !== '-' && m(n) !== 'nan'; }).map(function (n) { return n + '=' + m(n); });
              return {check: D.checks[k[0]], verdict: k[1], reason: str(k[2]), names: names, metrics: k[3], m: m, key: key.join(' '), figures: k[4] || {},
                      notes: k[5] || []};
            })};
  });
  // An element with its attributes and children (text as text nodes: nothing from the data is parsed as markup).
  function make(ns, tag, attrs, kids) {
    var e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    (kids || []).forEach(function (k) {
      if (k !== null && k !== undefined && k !== '') e.appendChild(typeof k === 'string' ? document.createTextNode(k) : k);
    });
    return e;
  }
  function el(tag, attrs, kids) { return make(null, tag, attrs, kids); }
  function sv(tag, attrs, kids) { return make(SVG, tag, attrs, kids); }
  function svg(cls, w, h) { return sv('svg', {'class': cls, width: w, height: h, role: 'img'}); }
  function text(x, y, t, cls) { return sv('text', {x: x, y: y, 'class': cls || 'ax'}, [t]); }
  function f1(x) { return x.toFixed(1); }
  // A number as C's printf %.<p>g writes it (the reports' format).
  function g(x, p) {
    p = p || 3;
    if (!isFinite(x)) return isNaN(x) ? 'nan' : x < 0 ? '-inf' : 'inf';
    if (x === 0) return '0';
    var parts = x.toExponential(p - 1).split('e'), exp = +parts[1], n = Math.abs(+parts[0].replace('.', ''));
    if (n % 2 === 1 && Math.abs(x) === (n - 0.5) * Math.pow(10, exp - p + 1)) {  // C rounds a tie to even, toExponential up
      x = (x < 0 ? -1 : 1) * (n - 1) * Math.pow(10, exp - p + 1);
      parts = x.toExponential(p - 1).split('e');
      exp = +parts[1];
    }
    function trim(t) { return t.indexOf('.') >= 0 ? t.replace(/\.?0+$/, '') : t; }
    if (exp < -4 || exp >= p) return trim(parts[0]) + 'e' + (exp < 0 ? '-' : '+') + (Math.abs(exp) < 10 ? '0' : '') + Math.abs(exp);
    return trim(x.toFixed(p - 1 - exp));
  }
  function range(ys) {
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys);
    return [lo, hi > lo ? hi : lo + (lo === 0 ? 1 : Math.abs(lo) * 0.1)];
  }
  function median(v) {
    var s = v.slice().sort(function (a, b) { return a - b; }), mid = s.length >> 1;
    return s.length % 2 ? s[mid] : s[mid - 1] + (s[mid] - s[mid - 1]) / 2;
  }
  // [value, count] runs back to the series.
  function expand(runs) {
    var v = [];
    (runs || []).forEach(function (r) { for (var i = 0; i < r[1]; i++) v.push(r[0]); });
    return v;
  }
  function figure(note, chart) { return chart ? el('div', {}, [el('div', {'class': 'note'}, [note]), chart]) : null; }

  // The charts: rows = sequence position, columns = value head dim, one path per colour level.
  function heatmap(h) {
    var cw = 12, ch = 7, left = 46, top = 16, rows = h.levels.length / h.cols, paths = {};
    var w = left + h.cols * cw, H = top + rows * ch + 14, s = svg('heatmap', w, H);
    s.appendChild(text(left, 11, h.col_axis + ' (0..' + h.head_dim_v + ') →'));
    s.appendChild(text(2, top + 8, 'pos 0'));
    s.appendChild(text(2, H - 16, String(h.seq_len)));
    for (var i = 0; i < h.levels.length; i++) {
      var l = parseInt(h.levels[i], 12);
      if (!isNaN(l)) paths[l] = (paths[l] || '') + 'M' + (left + (i % h.cols) * cw) + ' ' + (top + Math.floor(i / h.cols) * ch) + 'h12v7h-12z';
    }
    D.heat_colours.forEach(function (c, l) { if (paths[l]) s.appendChild(sv('path', {'class': 'cell l' + l, fill: c, d: paths[l]})); });
    s.appendChild(text(2, H - 2, 'colour: error / tolerance, red ≥ 1, black NaN/inf'));
    return s;
  }
  function lineChart(ys, label) {
    if (!ys || !ys.length) return null;
    var w = 260, h = 90, pad = 8, r = range(ys), s = svg('chart', w, h + 14), pts = '';
    function X(i) { return ys.length === 1 ? w / 2 : pad + (w - 2 * pad) * i / (ys.length - 1); }
    function Y(y) { return h - pad - (h - 2 * pad) * (y - r[0]) / (r[1] - r[0]); }
    ys.forEach(function (y, i) { pts += f1(X(i)) + ',' + f1(Y(y)) + ' '; });
    s.appendChild(sv('polyline', {'class': 'line', points: pts}));
    ys.forEach(function (y, i) { s.appendChild(sv('circle', {cx: f1(X(i)), cy: f1(Y(y)), r: '2.5'})); });
    s.appendChild(text(2, h + 12, label + ': ' + g(r[0]) + ' .. ' + g(r[1])));
    return s;
  }
  // A trend over runs, a red dashed line before each change point and an amber diamond where the fingerprint changed.
  function trendChart(t) {
    var ys = t.values, w = 420, h = 120, pad = 10, top = 14, ref = t.reference;
    var r = range(ref === undefined ? ys : ys.concat([ref])), s = svg('chart trend-chart', w, top + h + 14), pts = '';
    function X(i) { return ys.length === 1 ? w / 2 : pad + (w - 2 * pad) * i / (ys.length - 1); }
    function Y(y) { return top + h - pad - (h - 2 * pad) * (y - r[0]) / (r[1] - r[0]); }
    t.fingerprint.forEach(function (f) {
      var x = f1(X(f - 0.5));
      s.appendChild(sv('line', {'class': 'fp', x1: x, x2: x, y1: top - 2, y2: top + h}));
      s.appendChild(sv('path', {'class': 'fp', d: 'M' + x + ' ' + (top - 2) + 'l4 4l-4 4l-4 -4z'}));
    });
    if (ref !== undefined) s.appendChild(sv('line', {'class': 'ref', x1: 0, x2: w, y1: f1(Y(ref)), y2: f1(Y(ref))}));
    ys.forEach(function (y, i) { pts += f1(X(i)) + ',' + f1(Y(y)) + ' '; });
    s.appendChild(sv('polyline', {'class': 'line', points: pts}));
    ys.forEach(function (y, i) { s.appendChild(sv('circle', {cx: f1(X(i)), cy: f1(Y(y)), r: '2'})); });
    t.changes.forEach(function (c) {
      var x = X(c[0] - 0.5);
      s.appendChild(sv('line', {'class': 'cp', x1: f1(x), x2: f1(x), y1: top, y2: top + h}));
      s.appendChild(sv('text', {'class': 'cp-label', x: f1(x + 3), y: top + 8}, [c[1]]));
    });
    s.appendChild(text(2, top + h + 12, t.metric + ': ' + g(r[0]) + ' .. ' + g(r[1]) + ' over ' + ys.length + ' runs'));
    return s;
  }
  // Two rows of dots on one axis (this run's samples and the baseline's), each with its median.
  function distribution(cur, base, label) {
    var all = cur.concat(base);
    if (!all.length) return null;
    var w = 320, left = 64, rowH = 22, r = range(all), s = svg('chart', w, 2 * rowH + 16);
    function X(v) { return left + (w - left - 8) * (v - r[0]) / (r[1] - r[0]); }
    [['this run', cur], ['baseline', base]].forEach(function (row, i) {
      var y = rowH * i + 12;
      s.appendChild(text(2, y + 4, row[0]));
      row[1].forEach(function (v) { s.appendChild(sv('circle', {'class': 's' + i, cx: f1(X(v)), cy: y, r: 3})); });
      if (row[1].length) { var m = f1(X(median(row[1]))); s.appendChild(sv('line', {'class': 'med', x1: m, x2: m, y1: y - 8, y2: y + 8})); }
    });
    s.appendChild(text(left, 2 * rowH + 12, label + ': ' + g(r[0]) + ' .. ' + g(r[1])));
    return s;
  }
  // The perf decision on one axis of time ratio: baseline 1, the threshold, the interval and the ratio.
  function ratioInterval(q) {
    var ratio = q[0], lo = Math.min(ratio, q[1], 1) - 0.02, hi = Math.max(ratio, q[2], q[3]) + 0.02, w = 320, left = 8, y = 18;
    var s = svg('chart ratio', w, 46);
    function X(v) { return f1(left + (w - 2 * left) * (v - lo) / (hi - lo)); }
    s.appendChild(sv('line', {'class': 'base', x1: X(1), x2: X(1), y1: 4, y2: 32}));
    s.appendChild(sv('line', {'class': 'ref', x1: X(q[3]), x2: X(q[3]), y1: 4, y2: 32}));
    s.appendChild(sv('line', {'class': 'ci', x1: X(q[1]), x2: X(q[2]), y1: y, y2: y}));
    s.appendChild(sv('circle', {'class': 'ratio', cx: X(ratio), cy: y, r: 4}));
    s.appendChild(text(2, 44, 'time ratio ' + g(ratio) + ', CI [' + g(q[1]) + ', ' + g(q[2]) + ']; grey 1 = baseline, red dashed ' + g(q[3]) + ' = threshold'));
    return s;
  }
  // Horizontal bars with their labels and values.
  function bars(list, unit) {
    var hi = Math.max.apply(null, list.map(function (b) { return b[1]; }).concat([0]));
    if (!list.length || hi <= 0) return null;
    var w = 320, left = 72, barH = 16, s = svg('chart', w, list.length * (barH + 6));
    list.forEach(function (b, i) {
      var y = i * (barH + 6), len = (w - left - 90) * b[1] / hi;
      s.appendChild(text(2, y + 12, b[0]));
      s.appendChild(sv('rect', {'class': 'bar b' + i, x: left, y: y, width: f1(len), height: barH}));
      s.appendChild(text(f1(left + len + 4), y + 12, g(b[1], 4) + ' ' + unit));
    });
    return s;
  }

  // One check: its verdict and reason, every scalar metric, and its figures.
  function checkBlock(k) {
    var names = k.names, f = k.figures, m = k.m;
    var table = el('table', {'class': 'metrics'}), figs = [];
    names.forEach(function (n, i) { if (k.metrics[i] !== null) table.appendChild(el('tr', {}, [el('td', {}, [n]), el('td', {'class': 'num'}, [k.metrics[i]])])); });
    if (k.check === 'golden')
      figs.push(f.heatmap ? figure('max abs error over sequence position × value head dim', heatmap(f.heatmap)) : el('p', {'class': 'note'}, ['no error map recorded']));
    if (k.check === 'memory') {
      figs.push(figure('live heap bytes after each call', lineChart(expand(f.live), 'bytes')), figure('RSS after each call', lineChart(expand(f.rss), 'bytes')));
      if (f.bars) figs.push(figure('peak against baseline', bars(f.bars, 'bytes')));
      if (f.crash) figs.push(el('pre', {'class': 'mono'}, ['crash: ' + f.crash]));
    }
    if (k.check === 'perf') {
      figs.push(el('div', {}, [el('div', {'class': 'note'}, ['time per repetition, this run against the baseline']), distribution(f.samples, f.baseline, 'seconds')]));
      if (m('ratio') !== '-' && m('ratio') !== 'nan')
        figs.push(el('p', {}, ['time ratio (this run / baseline) ', el('b', {}, [m('ratio')]), ', ' + f.ci_percent + '% CI [' + m('ci_low') + ', ' + m('ci_high') +
                               '], p = ' + m('p_value') + ' (adjusted ' + m('p_adjusted') + '), status ' + m('status')]));
      if (f.ratio) figs.push(figure('time ratio with its confidence interval against the threshold', ratioInterval(f.ratio)));
    }
    if (k.check === 'cost')
      figs.push(el('p', {}, [m('usd_per_million_tokens') + ' ' + m('currency') + ' per million tokens (baseline ' + m('baseline_usd_per_million_tokens') + ') on ' +
                             m('device_class') + ' at ' + m('price_per_hour') + ' per hour — price source: ' + m('price_source') + ' (' + m('price_date') + ')']));
    var notes = k.notes.map(function (n) { return el('div', {'class': 'note'}, [n]); });
    return el('div', {'class': 'check ' + k.verdict, 'data-check': k.check},
              [el('b', {}, [k.check]), ': ', el('span', {'class': 'v ' + k.verdict}, [k.verdict]), ' — ' + k.reason].concat(notes, [el('div', {'class': 'figs'}, [table].concat(figs))]));
  }
  function trends(row) {
    if (!row.trends.length) return null;
    return el('div', {'class': 'trend'}, [el('b', {}, ['trend over ' + D.trend_runs + ' run(s)']), el('div', {'class': 'figs'}, row.trends.map(function (t) {
      return el('div', {}, [el('div', {'class': 'note'}, [t.title + ' (red: change point; amber: fingerprint changed)']), trendChart(t)].concat(
        t.notes.map(function (n) { return el('div', {'class': 'cp-note'}, [n]); })));
    }))]);
  }
  // A case x kernel's details, drawn the first time it opens.
  function draw(d) {
    var row = ROWS[+d.id.slice(2)];
    if (!row || d.dataset.drawn) return;
    d.dataset.drawn = '1';
    d.appendChild(el('div', {'class': 'mono'}, [row.params + '· version ' + row.version + ' · ' + row.seconds + ' s']));
    row.checks.forEach(function (k) { d.appendChild(checkBlock(k)); });
    var t = trends(row);
    if (t) d.appendChild(t);
  }
  function byRank(a, b) { return D.rank[a.verdict] - D.rank[b.verdict] || a.i - b.i; }
  function failing(row) { return row.verdict === 'fail' || row.verdict === 'error'; }
  // The sections, failures first and open, each only its summary until it opens.
  var sections = document.createDocumentFragment();
  ROWS.filter(failing).concat(ROWS.filter(function (row) { return !failing(row); })).forEach(function (row) {
    var v = row.verdict;
    sections.appendChild(el('details', failing(row) ? {'class': 'case ' + v, id: 'r-' + row.i, open: ''} : {'class': 'case ' + v, id: 'r-' + row.i},
                            [el('summary', {}, [row.kase + ' / ' + row.kernel + ' — ', el('span', {'class': 'v ' + v}, [v])])]));
  });
  var holder = document.getElementById('sections');
  if (holder) holder.appendChild(sections);
  document.addEventListener('toggle', function (e) { if (e.target.open && e.target.classList.contains('case')) draw(e.target); }, true);
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1)), d = id && document.getElementById(id);
    if (d && d.tagName === 'DETAILS') { d.open = true; draw(d); }
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
  Array.prototype.forEach.call(document.querySelectorAll('details.case[open]'), draw);
  Array.prototype.forEach.call(document.querySelectorAll('td.bars'), function (td) {
    var b = bars(JSON.parse(td.dataset.bars), td.dataset.unit);
    if (b) td.appendChild(b);
  });
  // The matrix's blocks, named and titled with their numbers.
  var matrix = document.getElementById('matrix');
  Array.prototype.forEach.call(matrix ? matrix.querySelectorAll('a.mc') : [], function (a) {
    var row = ROWS[+a.getAttribute('href').slice(3)], names = matrix.dataset.checks.split(' ');
    a.setAttribute('data-case', row.kase);
    a.dataset.kernel = row.kernel;
    Array.prototype.forEach.call(a.querySelectorAll('.ck'), function (span, j) {
      row.checks.forEach(function (k) {
        if (k.check !== names[j]) return;
        span.dataset.check = k.check;
        span.dataset.verdict = span.classList[1];
        span.title = row.kase + ' / ' + row.kernel + ' — ' + k.check + ': ' + span.classList[1] + '\n' + k.key + '\n' + k.reason;
      });
    });
  });

  // The table of every case x kernel x check, failures first, sortable and filterable.
  var table = document.getElementById('results');
  var filter = document.getElementById('filter');
  var onlyFail = document.getElementById('only-fail');
  var shown = document.getElementById('shown');
  if (!table) return;
  var body = table.tBodies[0], list = [], trs = document.createDocumentFragment();
  ROWS.forEach(function (row) { row.checks.forEach(function (k) { list.push({row: row, k: k, verdict: k.verdict, i: list.length}); }); });
  list.sort(byRank).forEach(function (x) {
    var row = x.row, k = x.k, v = k.verdict;
    trs.appendChild(el('tr', {'class': v, 'data-verdict': v}, [el('td', {}, [el('a', {href: '#r-' + row.i}, [row.kase])]), el('td', {}, [row.kernel]),
      el('td', {}, [k.check]), el('td', {'data-k': D.rank[v]}, [el('span', {'class': 'v ' + v}, [v.toUpperCase()])]), el('td', {'class': 'num'}, [k.key]),
      el('td', {}, [k.reason])]));
  });
  body.appendChild(trs);
  function apply() {
    var q = filter.value.toLowerCase(), n = 0;
    Array.prototype.forEach.call(body.rows, function (r) {
      var show = r.textContent.toLowerCase().indexOf(q) >= 0 && (!onlyFail.checked || r.dataset.verdict === 'fail' || r.dataset.verdict === 'error');
      r.style.display = show ? '' : 'none';
      if (show) n++;
    });
    shown.textContent = n;
  }
  function key(row, i) { var c = row.cells[i]; return c.dataset.k !== undefined ? c.dataset.k : c.textContent; }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    th.addEventListener('click', function () {
      var asc = th.dataset.dir !== 'asc';
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (o) { delete o.dataset.dir; });
      th.dataset.dir = asc ? 'asc' : 'desc';
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, i), y = key(b, i), nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  filter.addEventListener('input', apply);
  onlyFail.addEventListener('change', apply);
  apply();
})();
)JS";

}  // namespace attngate::html_assets
