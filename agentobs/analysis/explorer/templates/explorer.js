/* agentobs explorer: the overview charts, the runs table, a signature's page and a run's waterfall, drawn from
   the page's data island (#explorer-data) or, served by `agentobs view`, from its API (api/runs, api/run).
   Every text from the traces is written with textContent, or escaped (esc) where DataTables takes HTML. */
"use strict";
(function () {
  const byId = (id) => document.getElementById(id);
  const DATA = JSON.parse(byId("explorer-data").textContent);
  const S = DATA.strings;
  const META = DATA.meta;
  const SERVED = META.mode === "served";
  const COLS = DATA.schema.columns;
  const COL_INDEX = Object.fromEntries(COLS.map((c, i) => [c.name, i]));
  const CELLS = Object.fromEntries((DATA.table.columns || []).map((c) => [c.name, c.cells]));
  const FACETS = DATA.schema.facets;
  const SIGNATURES = DATA.signatures;
  const ID_COLUMNS = ["run_id", "trace_id", "task_id", "conversation_id"];
  const TITLES = {run_id: "run", start: "start (UTC)", stop_reason: "stop reason", tool_calls: "tool calls",
    cost_usd: "cost (USD)", active_s: "active s", wall_s: "wall s", label: "label", signature: "signature"};
  const ROLES = ["agent", "step", "chat", "tool", "chain", "other"];
  const WATERFALL_SLICE = 2000;     // spans drawn at once in a run's waterfall
  let DETAILS = null;       // the page's run waterfalls: parsed when a run is first opened, not at start
  const details = () => DETAILS || (DETAILS = JSON.parse(byId("explorer-details").textContent));
  const state = {filter: {equals: {}, from: null, to: null, q: ""}, listRoute: "runs", table: null, drawn: {}};

  // -- small helpers ---------------------------------------------------------------------------------------
  const txt = (c, table) => (c === null || c === undefined || c < 0) ? "" : (table || S)[c];
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k === "href") e.setAttribute("href", safeHref(v));
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function safeHref(v) {
    const s = String(v);
    return (s.startsWith("#") || /^https?:\/\/[^\s]+$/i.test(s)) ? s : "#";
  }
  const route = (...parts) => "#" + parts.map(encodeURIComponent).join("/");
  function num(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    return Number(v.toPrecision(digits || 6)).toLocaleString("en-US", {maximumFractionDigits: 10});
  }
  const isoTime = (ms) => (ms === null || ms === undefined) ? "" : new Date(ms).toISOString().replace("T", " ")
    .slice(0, 19);
  function ms(us) {
    if (us === null || us === undefined) return "–";
    const v = us / 1000;
    return v.toLocaleString("en-US", {maximumFractionDigits: v < 10 ? 3 : v < 1000 ? 1 : 0});
  }
  function fail(err) {
    console.error(err);
    const f = byId("failure");
    f.hidden = false;
    f.textContent = "The explorer could not start: " + (err && err.message ? err.message : String(err));
  }

  // -- the runs: one accessor for both kinds of rows ---------------------------------------------------------
  // a page's row is its index into CELLS (texts as codes into S); a served row is {row, cells} (texts decoded)
  function value(row, name) {
    if (typeof row === "number") {
      const col = COLS[COL_INDEX[name]];
      const cells = CELLS[name];
      if (!col || !cells) return null;
      const v = cells[row];
      if (col.kind === "text") return v < 0 ? null : S[v];
      if (col.kind === "list") return v.map((c) => S[c]);
      return v;
    }
    return row.cells[name] === undefined ? null : row.cells[name];
  }
  function display(kind, v) {
    if (v === null || v === undefined) return "";
    if (kind === "num") return num(v);
    if (kind === "time") return isoTime(v);
    if (kind === "bool") return v ? "yes" : "no";
    if (kind === "list") return v.join(", ");
    return String(v);
  }
  const runIndex = new Map();
  if (!SERVED && CELLS.run_id) CELLS.run_id.forEach((c, i) => { if (c >= 0 && !runIndex.has(S[c])) runIndex.set(S[c], i); });

  // -- filters ---------------------------------------------------------------------------------------------
  const facetCodes = {};      // facet column -> text -> code
  for (const f of FACETS) facetCodes[f.column] = new Map(f.options.map(([c]) => [S[c], c]));

  function buildFilters() {
    const form = byId("filters");
    for (const f of FACETS) {
      const sel = el("select", {name: f.column, "aria-label": f.column.replace(/_/g, " "),
        dataset: {facet: f.column}, onchange: onFilterInput});
      sel.append(el("option", {value: "", text: "any"}));
      for (const [code, n] of f.options) {
        sel.append(el("option", {value: String(code), text: S[code] + " (" + n.toLocaleString("en-US") + ")"}));
      }
      form.append(el("label", {}, (TITLES[f.column] || f.column.replace(/_/g, " ")) + " ", sel));
    }
    const from = el("input", {type: "datetime-local", step: "1", name: "from", onchange: onFilterInput});
    const to = el("input", {type: "datetime-local", step: "1", name: "to", onchange: onFilterInput});
    form.append(el("label", {}, "from (UTC) ", from), el("label", {}, "to (UTC) ", to));
    const q = el("input", {type: "search", name: "q", placeholder: "run, trace, task or conversation id (or its start)",
      size: "34", oninput: onFilterInput});
    form.append(el("label", {}, "id ", q));
    form.append(el("button", {type: "button", text: "clear", onclick: () => {
      const sig = state.filter.equals.signature;      // a signature's page keeps its signature
      state.filter = {equals: state.listRoute.startsWith("signature/") && sig !== undefined ? {signature: sig} : {},
        from: null, to: null, q: ""};
      writeForm(state.filter);
      syncRouteFromFilter();
    }}));
    form.addEventListener("submit", (e) => e.preventDefault());
  }
  function readForm() {
    const form = byId("filters");
    const f = {equals: {}, from: null, to: null, q: ""};
    for (const sel of form.querySelectorAll("select[data-facet]")) {
      if (sel.value !== "") f.equals[sel.dataset.facet] = Number(sel.value);
    }
    const utc = (v) => v ? Date.parse(v + (v.length === 16 ? ":00" : "") + "Z") : null;
    f.from = utc(form.elements.from.value);
    f.to = utc(form.elements.to.value);
    f.q = form.elements.q.value.trim().toLowerCase();
    return f;
  }
  function writeForm(f) {
    const form = byId("filters");
    for (const sel of form.querySelectorAll("select[data-facet]")) {
      const c = f.equals[sel.dataset.facet];
      sel.value = c === undefined ? "" : String(c);
      sel.disabled = state.listRoute.startsWith("signature/") && sel.dataset.facet === "signature";
    }
    const local = (ms) => ms === null ? "" : new Date(ms).toISOString().slice(0, 19);
    form.elements.from.value = local(f.from);
    form.elements.to.value = local(f.to);
    form.elements.q.value = f.q;
  }
  let inputTimer = null;
  function onFilterInput() {
    clearTimeout(inputTimer);
    inputTimer = setTimeout(() => { state.filter = readForm(); syncRouteFromFilter(); }, 150);
  }
  function setFilter(f) {
    state.filter = Object.assign({equals: {}, from: null, to: null, q: ""}, f);
    writeForm(state.filter);
    if (state.table) state.table.draw();
  }
  function filterQuery(f) {
    const p = new URLSearchParams();
    for (const [col, code] of Object.entries(f.equals)) {
      if (!(state.listRoute.startsWith("signature/") && col === "signature")) p.set(col, S[code]);
    }
    if (f.from !== null) p.set("from", new Date(f.from).toISOString());
    if (f.to !== null) p.set("to", new Date(f.to).toISOString());
    if (f.q) p.set("q", f.q);
    const s = p.toString();
    return s ? "?" + s : "";
  }
  function filterFromQuery(params, fixed) {
    const f = {equals: Object.assign({}, fixed || {}), from: null, to: null, q: ""};
    for (const [k, v] of params) {
      if (k === "from" || k === "to") { const t = Date.parse(v); f[k] = Number.isNaN(t) ? null : t; }
      else if (k === "q") f.q = v.toLowerCase();
      else if (facetCodes[k] && facetCodes[k].has(v)) f.equals[k] = facetCodes[k].get(v);
    }
    return f;
  }
  function syncRouteFromFilter() {
    const target = "#" + state.listRoute + filterQuery(state.filter);
    if (location.hash !== target) history.replaceState(null, "", target);
    if (state.table) state.table.draw();
  }
  function matches(i) {     // the same filter as runs_table.select on the server
    const f = state.filter;
    for (const [col, code] of Object.entries(f.equals)) {
      if (col === "signature") { if (!CELLS.signatures || !CELLS.signatures[i].includes(code)) return false; }
      else if (!CELLS[col] || CELLS[col][i] !== code) return false;
    }
    if ((f.from !== null || f.to !== null)) {
      const t = CELLS.start ? CELLS.start[i] : null;
      if (t === null) return false;
      if (f.from !== null && !(t >= f.from)) return false;
      if (f.to !== null && !(t < f.to)) return false;
    }
    if (f.q) {
      const hit = (c) => c >= 0 && S[c].toLowerCase().startsWith(f.q);
      if (!ID_COLUMNS.some((n) => CELLS[n] && hit(CELLS[n][i])) &&
          !(CELLS.trace_ids && CELLS.trace_ids[i].some(hit))) return false;
    }
    return true;
  }

  // -- the runs table --------------------------------------------------------------------------------------
  function runLink(id) {
    return route("run", id) + "?from=" + encodeURIComponent(state.listRoute);
  }
  function buildTable(DataTable) {
    // filtering is ours (matches, or the server's): DataTables' own search data (every cell rendered) is not built
    const columns = COLS.map((c) => ({
      title: esc(TITLES[c.name] || c.name.replace(/_/g, " ")), name: c.name, visible: c.visible, data: null,
      orderable: true, searchable: false, type: (c.kind === "num" || c.kind === "time") ? "num" : "string",
      render: (d, type, row) => {
        const v = value(row, c.name);
        if (type === "sort" || type === "type") {
          if (c.kind === "num" || c.kind === "time") return v === null ? -Infinity : v;
          if (c.kind === "bool") return v === null ? "" : (v ? "1" : "0");
          return display(c.kind, v).toLowerCase();
        }
        const shown = display(c.kind, v);
        if (c.name === "run_id" && v !== null) return '<a class="run-link" href="' + esc(runLink(v)) + '">' + esc(shown) + "</a>";
        return esc(shown);
      },
      className: (c.kind === "num" || c.kind === "time") ? "dt-right" : "",
    }));
    const options = {
      columns, deferRender: true, pageLength: 25, lengthMenu: [10, 25, 50, 100, 500], order: [], autoWidth: false,
      scrollX: true, searching: true, processing: SERVED,
      layout: {topStart: ["pageLength", "buttons"], topEnd: null, bottomStart: "info", bottomEnd: "paging"},
      buttons: [{extend: "colvis", text: "Columns", columns: ":not(:first-child)"}],
      language: {info: "runs _START_–_END_ of _TOTAL_", infoEmpty: "no run", infoFiltered: "(of _MAX_)",
        emptyTable: "no run", zeroRecords: "no run matches"},
      createdRow: (tr, row) => { tr.dataset.run = value(row, "run_id") || ""; },
    };
    if (SERVED) {
      options.serverSide = true;
      options.ajax = (params, callback) => {
        const q = new URLSearchParams({draw: params.draw, start: params.start, length: params.length});
        if (params.order && params.order.length) {
          q.set("order", COLS[params.order[0].column].name);
          q.set("dir", params.order[0].dir);
        }
        const f = state.filter;
        for (const [col, code] of Object.entries(f.equals)) q.set("f." + col, String(code));
        if (f.from !== null) q.set("from", String(f.from));
        if (f.to !== null) q.set("to", String(f.to));
        if (f.q) q.set("q", f.q);
        fetch("api/runs?" + q.toString()).then((r) => {
          if (!r.ok) throw new Error("the server answered " + r.status);
          return r.json();
        }).then((j) => {
          const rows = j.rows._row.map((row, k) => ({row, cells: Object.fromEntries(
            Object.keys(j.rows).map((name) => [name, j.rows[name][k]]))}));
          callback({draw: j.draw, recordsTotal: j.total, recordsFiltered: j.filtered, data: rows});
        }).catch(fail);
      };
    } else {
      options.data = Array.from({length: DATA.table.n}, (_, i) => i);
      DataTable.ext.search.push((settings, searchData, index, row) =>
        settings.nTable.id !== "runs-table" || matches(row));
    }
    const table = new DataTable("#runs-table", options);
    byId("runs-table").querySelector("tbody").addEventListener("click", (e) => {
      if (e.target.closest("a")) return;
      const tr = e.target.closest("tr");
      if (tr && tr.dataset.run) location.hash = runLink(tr.dataset.run);
    });
    return table;
  }
  function showRunsPanel(slot) {
    const panel = byId("runs-panel");
    if (panel.parentElement !== byId(slot)) byId(slot).append(panel);
    panel.hidden = false;
    if (state.table) state.table.columns.adjust();
  }

  // -- charts ----------------------------------------------------------------------------------------------
  function drawCharts() {
    const Plotly = window.Plotly;
    for (const div of document.querySelectorAll("#plots .plot")) {
      const name = div.dataset.chart;
      const fig = DATA.charts[name];
      if (!fig || state.drawn[name]) continue;
      Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
      state.drawn[name] = true;
      div.on("plotly_click", (ev) => {
        const p = ev.points && ev.points[0];
        if (!p || p.customdata === undefined || p.customdata < 0) return;
        const t = S[p.customdata];
        if (name === "stop_reasons") location.hash = "#runs?" + new URLSearchParams({stop_reason: t}).toString();
        else if (name === "signatures") location.hash = route("signature", t);
        else if (name === "context_growth") location.hash = route("run", t) + "?from=overview";
      });
    }
    document.body.dataset.charts = String(Object.keys(state.drawn).length);
  }

  // -- one signature ---------------------------------------------------------------------------------------
  function signatureByName(name) { return SIGNATURES.find((s) => S[s.name] === name); }
  function showSignature(name, params) {
    const s = signatureByName(name);
    const body = byId("signature-body");
    body.replaceChildren();
    if (!s) {
      body.append(el("p", {class: "warning", text: "No signature is named " + name + "."}));
      return;
    }
    body.append(el("div", {class: "crumbs"}, el("a", {href: "#overview", text: "Overview"}), " › signature"),
      el("h2", {text: name}),
      el("p", {text: S[s.looks_like]}),
      facts([["runs with it", num(s.runs) + " (" + (100 * s.share).toFixed(1) + "% of all runs)"],
        ["failed", num(s.failed)], ["primary signature of", num(s.primary) + " runs"], ["typical cause", S[s.cause]],
        ["control", S[s.control]], ["reference", S[s.reference]]]));
    const list = el("ul", {class: "examples"});
    for (const ex of s.examples) {
      const id = S[ex.run];
      const lines = el("ul", {class: "evidence-lines"});
      for (const c of ex.evidence) lines.append(el("li", {text: S[c]}));
      list.append(el("li", {}, el("a", {class: "example-run", href: route("run", id) + "?from=" +
        encodeURIComponent("signature/" + name), text: id}), lines));
    }
    body.append(el("h3", {text: "Example runs and their evidence"}), s.examples.length ? list :
      el("p", {class: "note", text: "No run has this signature."}));
    state.listRoute = "signature/" + name;
    showRunsPanel("signature-slot");
    setFilter(filterFromQuery(params, {signature: s.name}));
  }
  function facts(pairs) {
    const dl = el("dl", {class: "facts"});
    for (const [k, v] of pairs) {
      if (v === null || v === undefined || v === "") continue;
      dl.append(el("dt", {text: k}), el("dd", {}, v));
    }
    return dl;
  }

  // -- one run ---------------------------------------------------------------------------------------------
  async function showRun(id, params) {
    const body = byId("run-body");
    const from = params.get("from") || "runs";
    const back = from.startsWith("signature/") ? ["signature " + from.slice(10), route("signature", from.slice(10))]
      : from === "overview" ? ["overview", "#overview"] : ["runs", "#" + from];
    body.replaceChildren(el("div", {class: "crumbs"}, el("a", {href: "#overview", text: "Overview"}), " › ",
      el("a", {class: "back", href: back[1], text: "← " + back[0]}), " › run"), el("h2", {text: id}));
    document.body.dataset.run = "loading";
    let row = null;
    let detail = null;
    if (SERVED) {
      const r = await fetch("api/run?" + new URLSearchParams({id}).toString());
      if (r.status === 404) {
        body.append(el("p", {class: "warning", text: "No run has this id."}));
        document.body.dataset.run = "missing";
        return;
      }
      if (!r.ok) throw new Error("the server answered " + r.status);
      detail = await r.json();
      row = {row: detail.row, cells: detail.cells};
    } else {
      const i = runIndex.get(id);
      if (i === undefined) {
        body.append(el("p", {class: "warning", text: "No run has this id."}));
        document.body.dataset.run = "missing";
        return;
      }
      row = i;
      detail = details()[String(i)] || null;
    }
    body.append(runFacts(row));
    if (!detail || !detail.spans) {
      body.append(el("p", {class: "warning left-out-run", text: "This page does not hold this run's spans. " +
        (META.left_out || "")}));
      document.body.dataset.run = "no-spans";
      return;
    }
    const table = detail.strings || S;
    const evidence = evidenceOf(detail, table);
    body.append(evidenceBlock(evidence, row, table, from));
    body.append(waterfall(detail, table, evidence));
    document.body.dataset.run = "loaded";
    const first = body.querySelector(".wf-row.evidence");
    if (first && from.startsWith("signature/")) first.scrollIntoView({block: "center"});
  }
  function runFacts(row) {
    const sigs = value(row, "signatures") || [];
    const sigLinks = el("span", {});
    sigs.forEach((s, k) => {
      if (k) sigLinks.append(", ");
      sigLinks.append(el("a", {class: "signature-link", href: route("signature", s), text: s}));
    });
    const trace = value(row, "trace_id");
    const jaeger = META.jaeger && trace && /^[0-9a-f]{16,32}$/.test(trace)
      ? el("a", {class: "jaeger-link", href: META.jaeger.replace(/\/+$/, "") + "/trace/" + trace, text: "open in Jaeger",
        rel: "noopener noreferrer", target: "_blank"}) : null;
    const pick = (n) => { const c = COLS[COL_INDEX[n]]; return c ? display(c.kind, value(row, n)) : ""; };
    return facts([["signatures", sigs.length ? sigLinks : "none"], ["stop reason", pick("stop_reason")],
      ["status", pick("status")], ["label", pick("label")], ["agent", pick("agent")], ["model", pick("model")],
      ["service", pick("service")], ["start (UTC)", pick("start")], ["steps", pick("steps")],
      ["tool calls", pick("tool_calls")], ["tokens", pick("tokens")], ["cost (USD)", pick("cost_usd")],
      ["active s", pick("active_s")], ["wall s", pick("wall_s")], ["errors", pick("errors")],
      ["sub-agents", pick("sub_agents")], ["first error", pick("first_error")], ["trace", trace || ""],
      ["Jaeger", jaeger]]);
  }
  function evidenceOf(detail, table) {
    const out = [];
    for (const [code, ev] of Object.entries(detail.evidence || {})) {
      out.push({name: txt(Number(code), table), lines: ev.lines.map((c) => txt(c, table)), spans: ev.spans});
    }
    return out;
  }
  function evidenceBlock(evidence, row, table, from) {
    const box = el("div", {class: "evidence-box"});
    if (!evidence.length) {
      const sigs = value(row, "signatures") || [];
      if (sigs.length && !SERVED) {
        box.append(el("p", {class: "note", text: "A page holds the evidence of the signatures' example runs; " +
          "`agentobs view` finds it for every run."}));
      }
      return box;
    }
    for (const ev of evidence) {
      const ul = el("ul", {class: "evidence-lines"});
      for (const line of ev.lines) ul.append(el("li", {text: line}));
      box.append(el("h3", {}, "Evidence for ", el("a", {class: "signature-link", href: route("signature", ev.name),
        text: ev.name}), " (★ in the waterfall)"), ul);
    }
    return box;
  }
  function waterfall(detail, table, evidence) {
    const spans = detail.spans;
    const total = Math.max(detail.total_us, 1);
    const marked = new Map();
    for (const ev of evidence) for (const p of ev.spans) marked.set(p, (marked.get(p) || []).concat(ev.name));
    const hasChildren = new Set(spans.map((s) => s[1]).filter((p) => p >= 0));
    const wrap = el("div", {class: "waterfall", role: "table"});
    wrap.append(el("div", {class: "wf-row wf-head", role: "row"}, ...["span", "role", "start ms", "duration ms",
      "tokens in → out", "cost USD", "error", "timeline"].map((h) => el("span", {role: "columnheader", text: h}))));
    const rows = [];
    const row = (i) => {
      const [depth, parent, name, role, start, dur, status, error, tin, tout, cost, attrs, events] = spans[i];
      const roleName = txt(role, table) || "other";
      const toggle = hasChildren.has(i) ? el("button", {type: "button", class: "wf-toggle", "aria-expanded": "true",
        title: "collapse or expand", text: "▾"}) : el("span", {class: "wf-leaf"});
      const nameCell = el("span", {class: "wf-name", title: txt(name, table)}, toggle,
        marked.has(i) ? el("span", {class: "wf-star", title: "evidence for " + marked.get(i).join(", "), text: "★"}) : null,
        el("span", {class: "wf-label", text: txt(name, table)}));
      nameCell.style.paddingLeft = (depth * 14) + "px";
      const bar = el("span", {class: "wf-bar role-" + (ROLES.includes(roleName) ? roleName : "other")});
      bar.style.left = (100 * start / total) + "%";
      bar.style.width = Math.max(100 * dur / total, 0.3) + "%";
      const tokens = (tin === null && tout === null) ? "" : num(tin) + " → " + num(tout);
      const r = el("div", {class: "wf-row" + (marked.has(i) ? " evidence" : "") + (status === 2 ? " error" : ""),
        role: "row", dataset: {pos: String(i), depth: String(depth), role: roleName, parent: String(parent)}},
        nameCell, el("span", {class: "wf-role", text: roleName}), el("span", {class: "num wf-start", text: ms(start)}),
        el("span", {class: "num wf-dur", text: ms(dur)}), el("span", {class: "num", text: tokens}),
        el("span", {class: "num", text: cost === null ? "" : num(cost, 4)}),
        el("span", {class: "wf-error", text: error >= 0 ? txt(error, table) : ""}),
        el("span", {class: "wf-track"}, bar));
      r.addEventListener("click", (e) => {
        if (e.target.closest(".wf-toggle")) { collapse(rows, i); return; }
        const next = r.nextElementSibling;
        if (next && next.classList.contains("wf-attrs")) { next.remove(); return; }
        r.after(attributes(attrs, events, table));
      });
      return r;
    };
    // a run of many thousand spans is drawn a slice at a time (the page stays responsive)
    const more = el("button", {type: "button", class: "wf-more"});
    const draw = (upto) => {
      const stop = Math.min(upto, spans.length);
      for (let i = rows.length; i < stop; i++) { const r = row(i); rows.push(r); more.before(r); }
      more.hidden = rows.length >= spans.length;
      more.textContent = "show " + Math.min(WATERFALL_SLICE, spans.length - rows.length).toLocaleString("en-US") +
        " more of " + spans.length.toLocaleString("en-US") + " spans";
    };
    wrap.append(more);
    more.addEventListener("click", () => draw(rows.length + WATERFALL_SLICE));
    const lastEvidence = Math.max(-1, ...marked.keys());
    draw(Math.max(WATERFALL_SLICE, lastEvidence + 1));
    return wrap;
  }
  function collapse(rows, i) {
    const btn = rows[i].querySelector(".wf-toggle");
    const open = btn.getAttribute("aria-expanded") === "true";
    btn.setAttribute("aria-expanded", open ? "false" : "true");
    btn.textContent = open ? "▸" : "▾";
    const depth = Number(rows[i].dataset.depth);
    let hideBelow = null;
    for (let k = i + 1; k < rows.length; k++) {
      const d = Number(rows[k].dataset.depth);
      if (d <= depth) break;
      if (open) { rows[k].hidden = true; }
      else {
        if (hideBelow !== null && d > hideBelow) { rows[k].hidden = true; continue; }
        hideBelow = null;
        rows[k].hidden = false;
        const b = rows[k].querySelector(".wf-toggle");
        if (b && b.getAttribute("aria-expanded") === "false") hideBelow = d;
      }
      const next = rows[k].nextElementSibling;
      if (next && next.classList.contains("wf-attrs")) next.hidden = rows[k].hidden;
    }
  }
  function attributes(attrs, events, table) {
    const box = el("div", {class: "wf-attrs"});
    const t = el("table", {class: "attrs"});
    for (let k = 0; k < attrs.length; k += 2) t.append(el("tr", {}, el("th", {text: txt(attrs[k], table)}),
      el("td", {text: txt(attrs[k + 1], table)})));
    box.append(attrs.length ? t : el("p", {class: "note", text: "no attributes"}));
    if (events.length) {
      const ul = el("ul", {class: "events"});
      for (const [name, at, ea] of events) {
        const parts = [];
        for (let k = 0; k < ea.length; k += 2) parts.push(txt(ea[k], table) + "=" + txt(ea[k + 1], table));
        ul.append(el("li", {text: "event " + txt(name, table) + " at " + ms(at) + " ms" +
          (parts.length ? ": " + parts.join(", ") : "")}));
      }
      box.append(ul);
    }
    return box;
  }

  // -- routes ----------------------------------------------------------------------------------------------
  function parseHash() {
    const h = location.hash.replace(/^#/, "");
    const [path, query] = h.split("?", 2);
    const parts = path.split("/").map((p) => { try { return decodeURIComponent(p); } catch (e) { return p; } });
    return {view: parts[0] || "overview", arg: parts.slice(1).join("/"), params: new URLSearchParams(query || "")};
  }
  async function render() {
    const {view, arg, params} = parseHash();
    const known = ["overview", "runs", "signature", "run"].includes(view) ? view : "overview";
    for (const v of document.querySelectorAll("main > .view")) v.hidden = v.id !== "view-" + known;
    byId("runs-panel").hidden = !(known === "runs" || known === "signature");
    for (const a of byId("nav").querySelectorAll("a[data-view]")) a.classList.toggle("active", a.dataset.view === known);
    byId("nav-signature").hidden = known !== "signature";
    byId("nav-signature").textContent = known === "signature" ? "Signature " + arg : "";
    byId("nav-run").hidden = known !== "run";
    byId("nav-run").textContent = known === "run" ? "Run " + arg : "";
    document.body.dataset.view = known;
    if (known === "overview") drawCharts();
    else if (known === "runs") {
      state.listRoute = "runs";
      showRunsPanel("runs-slot");
      setFilter(filterFromQuery(params));
    } else if (known === "signature") showSignature(arg, params);
    else if (known === "run") await showRun(arg, params);
    window.scrollTo(0, 0);
  }

  // -- start -----------------------------------------------------------------------------------------------
  function libraryText(id) { return JSON.parse(byId(id).textContent); }
  function blobUrl(id) { return URL.createObjectURL(new Blob([libraryText(id)], {type: "text/javascript"})); }
  function loadScript(id) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = blobUrl(id);
      s.onload = resolve;
      s.onerror = () => reject(new Error("could not start " + id));
      document.head.append(s);
    });
  }
  async function start() {
    if (META.left_out) { byId("left-out").hidden = false; byId("left-out").textContent = META.left_out; }
    window.PlotlyConfig = {MathJaxConfig: "local"};
    const [, dt] = await Promise.all([loadScript("lib-plotly"), import(blobUrl("lib-datatables"))]);
    buildFilters();
    state.table = buildTable(dt.default);
    window.addEventListener("hashchange", () => render().catch(fail));
    await render();
    document.body.dataset.renderMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }
  start().catch(fail);
})();
