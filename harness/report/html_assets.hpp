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
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1)), el = id && document.getElementById(id);
    if (el && el.tagName === 'DETAILS') el.open = true;
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
  var table = document.getElementById('results');
  var filter = document.getElementById('filter');
  var onlyFail = document.getElementById('only-fail');
  var shown = document.getElementById('shown');
  if (!table) return;
  var body = table.tBodies[0];
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
