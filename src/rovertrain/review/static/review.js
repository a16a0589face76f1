// rovertrain review: the fleet and job pages, and the helpers every page shares.
// Plain browser JavaScript, no build step and nothing fetched from elsewhere.
"use strict";

const TOKEN = document.querySelector('meta[name="review-token"]').content;

async function api(path, options = {}) {
  const headers = Object.assign({"X-Review-Token": TOKEN}, options.headers || {});
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, Object.assign({}, options, {headers}));
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.message || `${response.status} ${response.statusText}`);
  return data;
}

function element(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== "") node.textContent = text;
  return node;
}

function fixed(value, digits) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

// A table sorted by a click on its header; `rows` are objects, `render` makes a <tr>.
function sortableTable(table, render) {
  const state = {rows: [], key: null, descending: false, keep: () => true};
  const body = table.querySelector("tbody");
  function draw() {
    const rows = state.rows.filter(state.keep);
    if (state.key) {
      const key = state.key, sign = state.descending ? -1 : 1;
      rows.sort((a, b) => {
        const x = a[key], y = b[key];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    }
    body.replaceChildren(...rows.map(render));
    return rows.length;
  }
  for (const header of table.querySelectorAll("th[data-key]")) {
    header.addEventListener("click", () => {
      state.descending = state.key === header.dataset.key ? !state.descending : false;
      state.key = header.dataset.key;
      for (const other of table.querySelectorAll("th")) other.classList.remove("sorted-asc", "sorted-desc");
      header.classList.add(state.descending ? "sorted-desc" : "sorted-asc");
      draw();
    });
  }
  return {state, draw};
}

// -- fleet ------------------------------------------------------------------------------------
async function fleetPage() {
  const data = await api("/api/fleet");
  document.getElementById("root").textContent = data.root;
  const models = sortableTable(document.getElementById("models"), modelRow);
  models.state.rows = data.models.map((model) => Object.assign({}, model, {
    fieldTakeOvers: model.field ? model.field.takeOversPer10Minutes : null,
    fieldAutonomy: model.field ? model.field.policyShare : null,
    state: model.current ? "current" : model.canary ? "canary" : model.valid ? "" : "invalid",
  }));
  models.draw();
  const sessions = sortableTable(document.getElementById("sessions"), sessionRow);
  sessions.state.rows = data.sessions;
  const rovers = [...new Set(data.sessions.map((s) => s.rover).filter((r) => r))].sort();
  const roverFilter = document.getElementById("rover-filter");
  for (const rover of rovers) roverFilter.append(element("option", {value: rover}, rover));
  const from = document.getElementById("date-from"), to = document.getElementById("date-to");
  const text = document.getElementById("text-filter");
  function filter() {
    sessions.state.keep = (s) =>
      (!roverFilter.value || s.rover === roverFilter.value) &&
      (!from.value || (s.date && s.date.slice(0, 10) >= from.value)) &&
      (!to.value || (s.date && s.date.slice(0, 10) <= to.value)) &&
      (!text.value || s.id.includes(text.value));
    const shown = sessions.draw();
    document.getElementById("session-count").textContent = `${shown} of ${data.sessions.length}`;
  }
  for (const input of [roverFilter, from, to, text]) input.addEventListener("input", filter);
  filter();
  const jobs = document.getElementById("jobs");
  for (const job of data.jobs.slice().reverse()) {
    const item = element("li");
    item.append(element("a", {href: `/job/${encodeURIComponent(job.id)}`}, job.id));
    if (job.running) item.append(" ", element("span", {class: "tag current"}, "running"));
    jobs.append(item);
  }
}

function modelRow(model) {
  const row = element("tr", {"data-model": model.id});
  row.append(
    element("td", {title: model.id}, model.name || model.id),
    element("td", {}, model.createdAt ? new Date(model.createdAt).toISOString().slice(0, 16).replace("T", " ") : "–"),
    element("td", {class: "num"}, model.steps ?? "–"),
    element("td", {class: "num"}, fixed(model.f1, 3)),
    element("td", {}, model.evaluation || "–"),
    element("td", {}, model.promote === null ? "–" : String(model.promote)),
    element("td", {class: "num"}, fixed(model.fieldTakeOvers, 1)),
    element("td", {class: "num"}, model.fieldAutonomy === null ? "–" : `${(100 * model.fieldAutonomy).toFixed(0)}%`),
  );
  const state = element("td");
  if (model.state) state.append(element("span", {class: `tag ${model.state}`}, model.state));
  row.append(state);
  return row;
}

function sessionRow(session) {
  const row = element("tr", {"data-session": session.id});
  const link = element("td");
  link.append(element("a", {href: `/session/${encodeURIComponent(session.id)}`}, session.id));
  const read = element("td", {title: session.why || ""});
  read.append(element("span", {class: `tag ${session.state}`}, session.state));
  if (session.why) read.append(" ", element("span", {class: "muted"}, session.why.slice(0, 60)));
  row.append(
    link,
    element("td", {}, session.rover || "–"),
    element("td", {}, session.date ? session.date.slice(0, 16).replace("T", " ") : "–"),
    element("td", {class: "num"}, fixed(session.seconds, 1)),
    element("td", {class: "num"}, session.commands ?? "–"),
    element("td", {class: "num"}, session.policyShare === null ? "–" : `${(100 * session.policyShare).toFixed(0)}%`),
    element("td", {}, session.partition),
    read,
  );
  return row;
}

// -- job --------------------------------------------------------------------------------------
const SVG = "http://www.w3.org/2000/svg";

function drawChart(svg, legend, series, gates) {
  const width = svg.clientWidth || 800, height = svg.clientHeight || 240, pad = 36;
  const points = series.flatMap((s) => s.points);
  svg.replaceChildren();
  legend.replaceChildren();
  if (!points.length) return;
  // Loops, not Math.min(...xs): a long job has more points than a call takes arguments.
  let x0 = Infinity, x1 = -Infinity, y0 = 0, y1 = -Infinity;
  for (const [x, y] of points) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  for (const gate of gates) { y0 = Math.min(y0, gate.value); y1 = Math.max(y1, gate.value); }
  x1 = Math.max(x1, x0 + 1);
  y1 = Math.max(y1, y0 + 1e-6);
  const X = (x) => pad + (x - x0) / (x1 - x0) * (width - 2 * pad);
  const Y = (y) => height - pad + (y - y0) / (y1 - y0) * (2 * pad - height);
  const add = (tag, attributes, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
    if (text) node.textContent = text;
    svg.append(node);
    return node;
  };
  add("line", {x1: pad, y1: height - pad, x2: width - pad, y2: height - pad, stroke: "#aaa"});
  add("text", {x: pad, y: height - 10}, `step ${x0}`);
  add("text", {x: width - pad - 60, y: height - 10}, `step ${x1}`);
  add("text", {x: 2, y: Y(y1) + 4}, fixed(y1, 2));
  add("text", {x: 2, y: Y(y0)}, fixed(y0, 2));
  for (const gate of gates) {
    add("line", {x1: pad, x2: width - pad, y1: Y(gate.value), y2: Y(gate.value), stroke: gate.color,
                 "stroke-dasharray": "5 4", "data-gate": gate.name});
  }
  for (const s of series) {
    const d = s.points.map((p, i) => `${i ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join("");
    add("path", {d, fill: "none", stroke: s.color, "stroke-width": 1.6, "data-series": s.name,
                 "data-points": s.points.length});
    const item = element("span");
    item.append(element("i", {class: "swatch", style: `background:${s.color}`}), `${s.name} (${s.points.length})`);
    legend.append(item);
  }
}

// The precision bar judges timelyPrecision (a fire one tick early counted on time).
const EVAL_SERIES = [["f1", "#1f6feb", null], ["precision", "#94d82d", null],
                     ["timelyPrecision", "#2b8a3e", "minPrecision"],
                     ["recall", "#d9480f", "minRecall"], ["stopRecall", "#862e9c", "minStopRecall"]];

async function jobPage() {
  const jobId = decodeURIComponent(location.pathname.split("/").pop());
  document.getElementById("job-id").textContent = jobId;
  const loss = {loss: [], events: [], values: []}, evaluation = {};
  let gate = {}, offset = 0;
  for (;;) {
    const data = await api(`/api/jobs/${encodeURIComponent(jobId)}/events?from=${offset}`);
    offset = data.next;
    for (const event of data.events) {
      if (event.kind === "started") gate = event.gate || {};
      if (event.kind === "progress") {
        loss.loss.push([event.steps, event.loss]);
        loss.events.push([event.steps, event.losses.events]);
        loss.values.push([event.steps, event.losses.commandValues]);
      }
      if (event.kind === "evaluation") {
        for (const [name] of EVAL_SERIES) {
          if (typeof event.metrics[name] === "number") (evaluation[name] = evaluation[name] || []).push([event.steps, event.metrics[name]]);
        }
      }
      if (event.kind === "complete" || event.kind === "error") {
        document.getElementById("outcome").textContent = event.kind === "complete"
          ? `complete: ${event.trained ? "trained" : "not trained"}, ${event.steps ?? 0} steps` +
            (event.published ? `, published ${event.published.name}` : ", nothing published")
          : `error ${event.code}: ${event.message}`;
      }
    }
    drawChart(document.getElementById("loss-chart"), document.getElementById("loss-legend"), [
      {name: "loss", color: "#1d232b", points: loss.loss},
      {name: "events", color: "#1f6feb", points: loss.events},
      {name: "command values", color: "#d9480f", points: loss.values}], []);
    drawChart(document.getElementById("eval-chart"), document.getElementById("eval-legend"),
      EVAL_SERIES.filter(([name]) => evaluation[name]).map(([name, color]) => ({name, color, points: evaluation[name]})),
      EVAL_SERIES.filter(([, , key]) => typeof gate[key] === "number").map(([name, color, key]) => ({name: key, color, value: gate[key]})));
    document.getElementById("job-state").textContent =
      data.state === "running" ? "running" : data.state === "ended" ? "finished" : "interrupted";
    document.body.dataset.progressEvents = String(loss.loss.length);
    if (data.state === "interrupted") {
      document.getElementById("outcome").textContent = "ended without a complete or error event: the job was killed";
    }
    if (data.state !== "running" && offset >= data.size) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

const pages = {fleet: fleetPage, job: jobPage};
if (pages[document.body.dataset.page]) {
  pages[document.body.dataset.page]().catch((failure) => {
    document.querySelector("main").prepend(element("p", {class: "error", "data-testid": "page-error"}, String(failure)));
  });
}
