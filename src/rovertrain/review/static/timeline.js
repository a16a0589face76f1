// rovertrain review: one session's page. The video, and under it a timeline on the command
// clock (ms): the person's and the policy's commands, a chosen model's replayed decisions,
// the stretches where model and person disagree, and the stretches left out. A click seeks
// the video; a drag selects a stretch to leave out of training.
"use strict";

const view = {data: null, replay: null, t0: 0, t1: 1, selection: null, drag: null, lanes: []};
const sessionId = decodeURIComponent(location.pathname.split("/").pop());
const video = document.getElementById("video");
const canvas = document.getElementById("timeline");
const LANE_COLORS = {human: "#1f6feb", policy: "#d9480f", model: "#2b8a3e"};

function videoToClock(seconds) { return seconds * 1000 + view.data.offsetMs; }
function clockToVideo(ms) { return Math.max(0, (ms - view.data.offsetMs) / 1000); }
function xOf(t) { return (t - view.t0) / (view.t1 - view.t0) * canvas.width; }
function tOf(clientX) {
  const box = canvas.getBoundingClientRect();
  return view.t0 + (clientX - box.left) / box.width * (view.t1 - view.t0);
}

async function load() {
  view.data = await api(`/api/sessions/${encodeURIComponent(sessionId)}`);
  const s = view.data.session;
  document.getElementById("session-id").textContent = s.id;
  document.getElementById("session-facts").textContent =
    `${s.rover || "?"} · ${s.seconds ?? "?"} s · ${s.commands ?? "?"} commands · ${s.partition} · ${s.state}`;
  video.src = view.data.video;
  // A loop, not Math.min(...times): a long drive has more commands than a call takes arguments.
  view.t0 = view.data.offsetMs;
  view.t1 = Math.max(view.t0 + 1000, videoToClock(s.seconds || 0));
  for (const command of view.data.commands) {
    view.t0 = Math.min(view.t0, command.t);
    view.t1 = Math.max(view.t1, command.t);
  }
  view.lanes = [...new Set(view.data.commands.map((c) => c.type))];
  const select = document.getElementById("model");
  for (const model of view.data.models) {
    select.append(element("option", {value: model.id}, `${model.name || model.id}${model.current ? " (current)" : ""}`));
  }
  select.addEventListener("change", chooseModel);
  document.getElementById("replay").addEventListener("click", startReplay);
  video.addEventListener("loadedmetadata", () => {
    view.t1 = Math.max(view.t1, videoToClock(video.duration || 0));
    draw();
  });
  video.addEventListener("timeupdate", draw);
  drawLeftOut();
  draw();
}

function laneY(index, lanes) { return 20 + index * (canvas.height - 30) / lanes; }

// One lane per command type. A command with values is a dot per value at its height within
// the lane ([-1, 1]); one without values a bar: the person's (or the policy's) in the lane's
// upper half, the chosen model's in its lower half, so the two read side by side.
function drawLane(g, type, top, height) {
  const mid = top + height / 2;
  g.fillStyle = "#6b7480";
  g.fillText(type, 4, top - 4);
  const mark = (t, values, color, lower) => {
    g.fillStyle = color;
    if (!values.length) { g.fillRect(xOf(t) - 1, lower ? mid : top, 2, height / 2); return; }
    values.forEach((value, k) => {
      g.globalAlpha = k ? 0.55 : 1;
      g.fillRect(xOf(t) - 1, mid - value * height / 2 - 1, 3, 3);
    });
    g.globalAlpha = 1;
  };
  let modelMarks = 0;
  if (view.replay) {
    for (const decision of view.replay.decisions) {
      const entry = decision.types[type];
      if (entry && entry.fire) {
        mark(decision.t, Object.values(entry.values), "rgba(43,138,62,0.6)", true);
        modelMarks += 1;
      }
    }
  }
  for (const command of view.data.commands) {
    if (command.type === type) mark(command.t, Object.values(command.values), LANE_COLORS[command.by] || LANE_COLORS.human, false);
  }
  return modelMarks;
}

function draw() {
  const g = canvas.getContext("2d");
  const box = canvas.getBoundingClientRect();
  if (box.width && canvas.width !== Math.round(box.width)) canvas.width = Math.round(box.width);
  g.clearRect(0, 0, canvas.width, canvas.height);
  const lanes = view.lanes.length || 1;
  const band = (start, end, color) => {
    g.fillStyle = color;
    g.fillRect(xOf(start), 0, Math.max(2, xOf(end) - xOf(start)), canvas.height);
  };
  if (view.replay) for (const [start, end] of view.replay.disagreements) band(start, end, "rgba(224,49,49,0.22)");
  for (const entry of view.data.leftOut) band(entry.startMs, entry.endMs, "rgba(90,90,90,0.28)");
  if (view.selection) band(view.selection[0], view.selection[1], "rgba(31,111,235,0.18)");
  g.font = "11px system-ui";
  let modelMarks = 0;
  view.lanes.forEach((type, index) => {
    modelMarks += drawLane(g, type, laneY(index, lanes), (canvas.height - 30) / lanes - 10);
  });
  // What was drawn, for a person's tools and the tests: a canvas has no elements to query.
  canvas.dataset.leftOutBands = String(view.data.leftOut.length);
  canvas.dataset.disagreementBands = String(view.replay ? view.replay.disagreements.length : 0);
  canvas.dataset.modelMarks = String(modelMarks);
  const now = videoToClock(video.currentTime || 0);
  g.strokeStyle = "#111";
  g.beginPath(); g.moveTo(xOf(now), 0); g.lineTo(xOf(now), canvas.height); g.stroke();
  g.fillStyle = "#6b7480";
  g.fillText(`${(view.t0 / 1000).toFixed(1)} s`, 2, canvas.height - 2);
  g.fillText(`${(view.t1 / 1000).toFixed(1)} s`, canvas.width - 50, canvas.height - 2);
  canvas.dataset.playheadMs = String(Math.round(now));
}

canvas.addEventListener("mousedown", (e) => { view.drag = {start: tOf(e.clientX), moved: false}; });
canvas.addEventListener("mousemove", (e) => {
  if (!view.drag) return;
  const t = tOf(e.clientX);
  if (Math.abs(xOf(t) - xOf(view.drag.start)) > 3) view.drag.moved = true;
  if (view.drag.moved) { view.selection = [Math.min(view.drag.start, t), Math.max(view.drag.start, t)]; draw(); }
});
canvas.addEventListener("mouseup", (e) => {
  const drag = view.drag; view.drag = null;
  if (!drag) return;
  if (!drag.moved) {  // a click: seek there
    video.currentTime = clockToVideo(tOf(e.clientX));
    draw();
    return;
  }
  showSelection();
});

function showSelection() {
  const [start, end] = view.selection;
  document.getElementById("selection").textContent =
    `selected ${(start / 1000).toFixed(1)} s to ${(end / 1000).toFixed(1)} s`;
  document.getElementById("leave-out").disabled = false;
  document.getElementById("selection").dataset.startMs = String(Math.round(start));
  document.getElementById("selection").dataset.endMs = String(Math.round(end));
}

document.getElementById("leave-out").addEventListener("click", async () => {
  const reason = document.getElementById("reason").value.trim();
  const error = document.getElementById("write-error");
  error.textContent = "";
  if (!reason) { error.textContent = "say why (the reason is kept with the entry)"; return; }
  try {
    const [start, end] = view.selection;
    const entry = await api("/api/curation", {method: "POST", body: JSON.stringify(
      {sessionId, startMs: Math.round(start), endMs: Math.round(end), reason})});
    view.data.leftOut.push(entry);
    view.selection = null;
    document.getElementById("leave-out").disabled = true;
    document.getElementById("selection").textContent = "no stretch selected";
    document.getElementById("reason").value = "";
    drawLeftOut(); draw();
  } catch (failure) { error.textContent = String(failure.message || failure); }
});

function drawLeftOut() {
  const body = document.querySelector("#left-out tbody");
  body.replaceChildren(...view.data.leftOut.map((entry) => {
    const row = element("tr", {"data-entry": entry.id});
    const undo = element("button", {"data-testid": "undo"}, "undo");
    undo.addEventListener("click", async () => {
      try {
        await api(`/api/curation/${encodeURIComponent(entry.id)}`, {method: "DELETE"});
      } catch (failure) {
        if (!String(failure.message).includes("already undone")) {
          document.getElementById("write-error").textContent = String(failure.message);
          return;
        }
      }
      view.data.leftOut = view.data.leftOut.filter((other) => other.id !== entry.id);
      drawLeftOut(); draw();
    });
    const cell = element("td"); cell.append(undo);
    row.append(element("td", {class: "num"}, (entry.startMs / 1000).toFixed(1)),
               element("td", {class: "num"}, (entry.endMs / 1000).toFixed(1)),
               element("td", {}, entry.reason), element("td", {class: "muted"}, entry.at), cell);
    return row;
  }));
}

function chooseModel() {
  const model = document.getElementById("model").value;
  document.getElementById("replay").disabled = !model;
  view.replay = null;
  draw();
  if (model) pollReplay(model, false);
}

async function startReplay() {
  const model = document.getElementById("model").value;
  if (model) await pollReplay(model, true);
}

async function pollReplay(model, start) {
  const path = `/api/replays/${encodeURIComponent(model)}/${encodeURIComponent(sessionId)}`;
  const status = document.getElementById("replay-state");
  let found = await api(path, start ? {method: "POST"} : {});
  while (found.state === "running" && document.getElementById("model").value === model) {
    status.textContent = "replaying the drive through the model…";
    await new Promise((resolve) => setTimeout(resolve, 1000));
    found = await api(path);
  }
  if (document.getElementById("model").value !== model) return;
  status.dataset.state = found.state;
  if (found.state === "done") {
    view.replay = found;
    for (const decision of found.decisions.slice(0, 1)) {
      for (const type of Object.keys(decision.types)) if (!view.lanes.includes(type)) view.lanes.push(type);
    }
    status.textContent = `${found.decisions.length} ticks replayed, ${found.disagreements.length} stretches of disagreement`;
  } else if (found.state === "failed") {
    status.textContent = `replay failed: ${found.error}`;
  } else {
    status.textContent = "not replayed yet";
  }
  draw();
}

load().catch((failure) => {
  document.querySelector("main").prepend(element("p", {class: "error", "data-testid": "page-error"}, String(failure)));
});
