"use strict";
const units = ["B", "KiB", "MiB", "GiB", "TiB"];
function size(n) {
  if (n === null || n === undefined) return "--";
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
}
function speed(s) { return s === null || s === undefined ? "--" : size(Math.round(s)) + "/s"; }
function eta(s) {
  if (s === null || s === undefined) return "--";
  s = Math.round(s);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
}
function ago(s) { return s === null || s === undefined ? "--" : eta(Math.max(0, s)) + " ago"; }
function text(id, value) { document.getElementById(id).textContent = value; }
function el(tag, cls, content) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (content !== undefined) e.textContent = content;
  return e;
}
function cell(row, value, cls) {
  const td = el("td", cls);
  if (value instanceof Node) td.appendChild(value); else td.textContent = value;
  row.appendChild(td);
}
// Rows of class `cls` in `body`, one per item, or one row saying `empty`.
function fill(body, cls, items, columns, empty) {
  body.replaceChildren();
  if (items.length === 0) {
    const row = el("tr");
    const td = el("td", "empty", empty);
    td.colSpan = 8;
    row.appendChild(td); body.appendChild(row);
    return;
  }
  for (const item of items) {
    const row = el("tr", cls);
    columns(item, row);
    body.appendChild(row);
  }
}
// A round top for the rate axis: 1, 2, 2.5 or 5 times a power of ten of
// the unit the peak is shown in, so that the axis reads "5 MiB/s", not "4.37 MiB/s".
function axisTop(peak) {
  if (peak <= 0) return 1024;
  let unit = 1;
  while (peak / unit >= 1024 && unit < Math.pow(1024, units.length - 1)) unit *= 1024;
  const value = peak / unit;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  const step = [1, 2, 2.5, 5, 10].find(m => m * power >= value);
  return step * power * unit;
}
function span(seconds) {
  seconds = Math.round(seconds);
  if (seconds < 120) return seconds + " s";
  if (seconds < 7200) return Math.round(seconds / 60) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}
// The throughput chart in `box` (an element of class "chart"): the rate on
// a labelled axis from 0 to a round top, the time from the first sample to now.
function drawChart(box, samples) {
  const ns = "http://www.w3.org/2000/svg";
  let svg = box.querySelector("svg");
  if (!svg) {
    const y = el("div", "axis-y");
    y.append(el("span", "y-max"), el("span", "y-mid"), el("span", "y-zero"));
    svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 600 140");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "throughput over time");
    const x = el("div", "axis-x");
    x.append(el("span", "x-span"), el("span", "x-now", "now"));
    box.append(y, svg, x);
  }
  svg.replaceChildren();
  const w = 600, h = 140;
  const top = axisTop(Math.max(0, ...samples.map(s => s.speed)));
  box.querySelector(".y-max").textContent = speed(top);
  box.querySelector(".y-mid").textContent = speed(top / 2);
  box.querySelector(".y-zero").textContent = "0 B/s";
  for (const at of [0, h / 2, h]) {
    const grid = document.createElementNS(ns, "line");
    grid.setAttribute("x1", "0"); grid.setAttribute("x2", String(w));
    grid.setAttribute("y1", String(at)); grid.setAttribute("y2", String(at));
    grid.setAttribute("stroke", at === h ? "#98a2b3" : "#e4e7ec");
    grid.setAttribute("vector-effect", "non-scaling-stroke");
    svg.appendChild(grid);
  }
  if (samples.length === 0) { box.querySelector(".x-span").textContent = "no sample yet"; return; }
  // One sample so far: a flat line across.
  if (samples.length === 1) samples = [{ at: samples[0].at - 1, speed: samples[0].speed }, samples[0]];
  const t0 = samples[0].at, width = Math.max(1, samples[samples.length - 1].at - t0);
  box.querySelector(".x-span").textContent = span(width) + " ago";
  const points = samples.map(s => [(s.at - t0) / width * w, h - s.speed / top * h].map(v => v.toFixed(1)).join(","));
  const area = document.createElementNS(ns, "path");
  area.setAttribute("d", "M0," + h + " L" + points.join(" L") + " L" + w + "," + h + " Z");
  area.setAttribute("fill", "rgba(47,111,222,0.15)");
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#2f6fde");
  line.setAttribute("stroke-width", "2");
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(area, line);
}
// Failures grouped by their error: the error once, then each URL once
// under it with when it failed. `error(f)` is the group's text, with the
// URL itself taken out (a message that names it would say it twice).
function failureGroups(parent, failures, error, details, empty) {
  parent.replaceChildren();
  if (failures.length === 0) { parent.appendChild(el("div", "empty", empty)); return; }
  const groups = new Map();
  for (const f of failures) {
    const key = error(f);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(f);
  }
  for (const [key, list] of groups) {
    const group = el("div", "failure-group");
    const head = el("div", "failure-error");
    head.append(el("b", "failure-count", list.length + " failed"), document.createTextNode(key));
    const box = el("div", "scroll");
    box.style.border = "0";
    const table = el("table");
    const body = el("tbody");
    fill(body, "failure", list, details, "");
    table.appendChild(body);
    box.appendChild(table);
    group.append(head, box);
    parent.appendChild(group);
  }
}
// A failure's error without its own URL, which its row shows: "HTTP 404
// from URL" under the kind "http" is "http 404"; a URL elsewhere in the
// message (a redirect's hop) stays.
function errorText(kind, status, message, url) {
  let said = message || "";
  for (const before of [" from ", " for ", " at ", " "]) said = said.split(before + url).join("");
  said = said.split(url).join("this URL").trim();
  const label = kind + (status ? " " + status : "");
  if (said.toLowerCase().startsWith(label.toLowerCase())) said = said.slice(label.length).replace(/^[:\s]+/, "");
  return said ? label + ": " + said : label;
}
// Reads `path` every `ms` milliseconds and hands the document to `show`,
// whose answer, when not empty, is a trouble the header's status shows (the
// fleet view's database outage); while it cannot read, the status says
// `unreachable` and why.
function pollEvery(path, ms, show, unreachable) {
  async function poll() {
    try {
      const response = await fetch(path, { cache: "no-store", credentials: "same-origin" });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const trouble = show(await response.json()) || "";
      text("status", trouble);
      document.getElementById("status").className = trouble ? "muted down" : "muted";
    } catch (error) {
      text("status", unreachable + " (" + error.message + ")" + (path === "api/run" ? "; it may have ended" : ""));
      document.getElementById("status").className = "muted down";
    }
    setTimeout(poll, ms);
  }
  poll();
}
