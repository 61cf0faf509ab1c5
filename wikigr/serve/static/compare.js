// The compare view of the page (index.html #view-compare): see docs/serve.md. Uses app.js's helpers ($, el, t, api, events...).
// Profiles side by side on a pack's eval questions: a job (POST /packs/{pack}/compare) whose events
// fill a table of scores per profile and a matrix of questions × profiles (was the gold found).
"use strict";

const comparing = {
  ready: false,
  readOnly: false,
  state: null, // GET /packs/{pack}/compare
  job: null, // the id of the comparison followed
  ks: [],
  profiles: [], // the columns, in order
  summaries: {}, // profile: summary (the results file's)
  rows: {}, // profile: {question id: compact row}
  progress: {}, // profile: "n/total"
  questions: [], // [{id, question}], the matrix's rows
};

function compareStatus(message, isError = false) {
  const box = $("compare-status");
  box.textContent = message;
  box.classList.toggle("error", isError);
}

async function compareSetUp() {
  if (comparing.ready) { // opened again: the last runs may have changed (`wikigr eval`, another page)
    if (!comparing.job && $("compare-pack").value) await compareLoad($("compare-pack").value);
    return;
  }
  comparing.ready = true;
  const root = $("compare-root");
  const form = el("form", { id: "compare-form", class: "workbench", autocomplete: "off" },
    el("label", {}, t("compare.pack"), el("select", { id: "compare-pack" })),
    el("fieldset", { id: "compare-profiles" }, el("legend", { text: t("compare.profiles") })),
    el("label", {}, t("compare.baseline"), el("select", { id: "compare-baseline" })),
    el("label", {}, t("compare.judge"), el("select", { id: "compare-judge" })),
    el("label", {}, t("compare.limit"), el("input", { id: "compare-limit", type: "number", min: "1", placeholder: t("compare.all") })),
    el("label", { id: "compare-generate-label", hidden: "" }, t("compare.generate"),
      el("input", { id: "compare-generate", type: "number", min: "1", max: "200", placeholder: "0" })),
    el("button", { id: "compare-run", type: "submit", text: t("compare.run") }),
    el("button", { id: "compare-cancel", type: "button", class: "secondary", disabled: "", text: t("compare.cancel") }));
  root.replaceChildren(
    form,
    el("p", { id: "compare-status", role: "status", "aria-live": "polite" }),
    el("h2", { text: t("compare.scores") }),
    el("div", { class: "scroll" }, el("table", { id: "compare-table", class: "grid" })),
    el("h2", { text: t("compare.questions") }),
    el("p", { class: "hint", text: t("compare.matrix_hint") }),
    el("div", { class: "scroll" }, el("table", { id: "compare-matrix", class: "grid matrix" })));
  form.addEventListener("submit", compareRun);
  $("compare-cancel").addEventListener("click", compareCancel);
  $("compare-baseline").addEventListener("change", compareDraw);
  try {
    const health = await serverHealth();
    comparing.readOnly = health.read_only === true;
    if (!page.packs.length) page.packs = (await api("/packs")).packs.filter((p) => p.ok);
  } catch (error) {
    compareStatus(error.message, true);
    return;
  }
  const select = $("compare-pack");
  for (const pack of page.packs) select.append(el("option", { value: pack.name, text: pack.name }));
  const asked = $("pack").value;
  if (asked && page.packs.some((p) => p.name === asked)) select.value = asked;
  select.addEventListener("change", () => compareLoad(select.value));
  if (comparing.readOnly) {
    $("compare-run").disabled = true;
    compareStatus(t("compare.read_only"));
  }
  if (select.value) await compareLoad(select.value);
  else compareStatus(t("compare.no_packs"), true);
}

// The pack's state: its profiles, questions, judges and the last run of each profile.
async function compareLoad(name) {
  let state;
  try {
    state = await api(`/packs/${encodeURIComponent(name)}/compare`);
  } catch (error) {
    compareStatus(error.message, true);
    return;
  }
  comparing.state = state;
  const boxes = $("compare-profiles");
  boxes.replaceChildren(el("legend", { text: t("compare.profiles") }));
  for (const profile of state.profiles) {
    const box = el("input", { type: "checkbox", value: profile, id: `compare-profile-${profile}` });
    box.checked = true;
    boxes.append(el("label", { class: "check" }, box, profile));
  }
  const judge = $("compare-judge");
  judge.replaceChildren(...state.judges.map((j) => el("option", { value: j, text: j })));
  judge.value = state.judge;
  $("compare-generate-label").hidden = !state.generate;
  const last = Object.values(state.last);
  comparing.profiles = Object.keys(state.last);
  comparing.summaries = Object.fromEntries(last.map((run) => [run.profile, run.summary]));
  comparing.rows = Object.fromEntries(last.map((run) => [run.profile, Object.fromEntries(run.rows.map((r) => [r.id, r]))]));
  comparing.progress = {};
  comparing.ks = last.length ? last[0].ks || [] : state.ks;
  comparing.questions = state.questions;
  compareDraw();
  if (state.running) {
    compareStatus(t("compare.following", { job: state.running }));
    await compareFollow(state.running, name);
  } else if (comparing.readOnly) {
    compareStatus(t("compare.read_only"));
  } else if (state.questions_error) {
    compareStatus(state.questions_error, true);
  } else if (!state.questions.length) {
    compareStatus(t("compare.no_questions", { pack: name }));
  } else {
    const dates = last.map((run) => run.date).filter(Boolean).sort();
    compareStatus(last.length ? t("compare.last", { date: dates[dates.length - 1] || "" }) : plural("compare.ready", state.questions.length));
  }
}

async function compareRun(event) {
  event.preventDefault();
  if (comparing.job) return;
  const name = $("compare-pack").value;
  const profiles = [...document.querySelectorAll("#compare-profiles input:checked")].map((box) => box.value);
  if (!profiles.length) {
    compareStatus(t("compare.pick_profiles"), true);
    return;
  }
  const body = { profiles, judge: $("compare-judge").value };
  if ($("compare-limit").value) body.limit = Number($("compare-limit").value);
  if (!$("compare-generate-label").hidden && $("compare-generate").value) body.generate = Number($("compare-generate").value);
  let job;
  try {
    job = await api(`/packs/${encodeURIComponent(name)}/compare`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (error) {
    compareStatus(error.message, true);
    return;
  }
  comparing.profiles = profiles;
  comparing.summaries = {};
  comparing.rows = {};
  comparing.progress = {};
  comparing.ks = comparing.state.ks;
  compareDraw();
  await compareFollow(job.id, name);
}

// Follow a comparison's events (replayed from its first) until it ends.
async function compareFollow(id, name) {
  comparing.job = id;
  $("compare-run").disabled = true;
  $("compare-pack").disabled = true;
  $("compare-cancel").disabled = false;
  document.body.dataset.compared = "";
  let end = null;
  try {
    const response = await fetch(`${API}/jobs/${encodeURIComponent(id)}/events`);
    if (!response.ok) throw new Error((await response.json()).error || `HTTP ${response.status}`);
    for await (const [kind, data] of events(response)) {
      if (kind === "generating") {
        compareStatus(plural("compare.generating", data.n));
      } else if (kind === "generated") {
        compareStatus(plural("compare.generated", data.added));
        comparing.questions = (await api(`/packs/${encodeURIComponent(name)}/compare`)).questions;
      } else if (kind === "profile") {
        if (!comparing.profiles.includes(data.profile)) comparing.profiles.push(data.profile);
        comparing.rows[data.profile] = {};
        comparing.progress[data.profile] = `0/${data.total}`;
        compareStatus(t("compare.running", { profile: data.profile, n: 0, total: data.total }));
        compareDraw();
      } else if (kind === "question") {
        comparing.rows[data.profile][data.row.id] = data.row;
        comparing.progress[data.profile] = `${data.n}/${data.total}`;
        if (!comparing.questions.some((q) => q.id === data.row.id)) comparing.questions.push({ id: data.row.id, question: data.row.question });
        compareStatus(t("compare.running", { profile: data.profile, n: data.n, total: data.total }));
        compareDraw();
      } else if (kind === "summary") {
        comparing.summaries[data.profile] = data.summary;
        delete comparing.progress[data.profile];
        compareDraw();
      } else if (kind === "done" || kind === "failed" || kind === "cancelled") {
        end = [kind, data];
      }
    }
    if (!end) throw new Error(t("compare.incomplete"));
    if (end[0] === "done") {
      compareStatus(plural("compare.done", end[1].runs.length));
      if ($("pack").value === name) loadPack(name); // the Evaluation tab shows the new runs
    } else if (end[0] === "cancelled") {
      compareStatus(t("compare.cancelled"));
    } else {
      compareStatus(end[1].error, true);
    }
  } catch (error) {
    compareStatus(error.message, true);
  } finally {
    comparing.job = null;
    $("compare-run").disabled = comparing.readOnly;
    $("compare-pack").disabled = false;
    $("compare-cancel").disabled = true;
    document.body.dataset.compared = end ? end[0] : "error";
  }
}

async function compareCancel() {
  if (!comparing.job) return;
  try {
    await api(`/jobs/${encodeURIComponent(comparing.job)}/cancel`, { method: "POST" });
    compareStatus(t("compare.cancelling"));
  } catch (error) {
    compareStatus(error.message, true);
  }
}

// -- the table and the matrix -----------------------------------------------------------------

function compareColumns() {
  const ks = comparing.ks.length ? comparing.ks : [1, 5];
  return [
    ...ks.map((k) => [`recall@${k}`, t("compare.recall", { k })]),
    ["hit@1", t("compare.hit_one")],
    ["mrr", t("compare.mrr")],
    ["exact_match", t("compare.em")],
    ["f1", t("compare.fscore")],
    ["judge_accuracy", t("compare.judge_accuracy")],
    ["latency_p50_ms", t("compare.median")],
  ];
}

function compareDraw() {
  const baseline = $("compare-baseline");
  const chosen = baseline.value;
  baseline.replaceChildren(...comparing.profiles.map((p) => el("option", { value: p, text: p })));
  if (comparing.profiles.includes(chosen)) baseline.value = chosen;
  const base = baseline.value || comparing.profiles[0];
  compareTable(base);
  compareMatrix(base);
}

function compareCell(key, value, against) {
  if (typeof value !== "number") return el("td", { class: "none", text: "—" });
  const latency = key === "latency_p50_ms";
  const cell = el("td", { text: latency ? ms(value) : fixed(value, 3) });
  if (typeof against === "number") {
    const delta = value - against;
    const better = latency ? delta < 0 : delta > 0;
    const shown = latency ? ms(Math.abs(delta)) : fixed(Math.abs(delta), 3);
    const sign = delta === 0 ? "±" : delta > 0 ? "+" : "−";
    cell.append(el("span", { class: `delta ${delta === 0 ? "" : better ? "gain" : "loss"}`, text: ` ${sign}${shown}` }));
  }
  return cell;
}

function compareTable(base) {
  const columns = compareColumns();
  const table = $("compare-table");
  const head = el("tr", {}, el("th", { scope: "col", text: t("compare.profile") }), el("th", { scope: "col", text: t("compare.count") }),
    ...columns.map(([, label]) => el("th", { scope: "col", text: label })));
  const body = [head];
  for (const profile of comparing.profiles) {
    const summary = comparing.summaries[profile];
    const against = profile === base ? null : comparing.summaries[base];
    const name = el("th", { scope: "row", text: profile });
    if (profile === base) name.append(el("span", { class: "hint", text: ` ${t("compare.is_baseline")}` }));
    const row = el("tr", { "data-profile": profile }, name);
    if (!summary) {
      row.append(el("td", { class: "running", text: comparing.progress[profile] || "…" }), ...columns.map(() => el("td", { class: "none", text: "…" })));
    } else {
      row.append(el("td", { text: `${summary.retrieval_scored}/${summary.questions}` }));
      for (const [key] of columns) row.append(compareCell(key, summary[key], against ? against[key] : undefined));
    }
    body.push(row);
  }
  table.replaceChildren(...body);
}

function compareMatrix(base) {
  const table = $("compare-matrix");
  const head = el("tr", {}, el("th", { scope: "col", text: t("compare.question") }),
    ...comparing.profiles.map((p) => el("th", { scope: "col", text: p })));
  const body = [head];
  for (const question of comparing.questions) {
    const row = el("tr", { "data-question": question.id }, el("th", { scope: "row", title: question.question, text: `${question.id}: ${truncate(question.question, 70)}` }));
    const baseRow = (comparing.rows[base] || {})[question.id];
    for (const profile of comparing.profiles) {
      const found = (comparing.rows[profile] || {})[question.id];
      if (!found) {
        row.append(el("td", { class: "none", text: "…" }));
        continue;
      }
      if (found.found === null) {
        row.append(el("td", { class: "none", title: t("compare.no_gold"), text: "—" }));
        continue;
      }
      let change = "";
      if (profile !== base && baseRow && baseRow.found !== null && baseRow.found !== found.found) change = found.found ? " gain" : " loss";
      const about = found.found ? t("compare.found", { rank: found.rank }) : t("compare.missed");
      row.append(el("td", { class: `${found.found ? "hit" : "miss"}${change}`, title: `${about} · ${ms(found.latency_ms || 0)}`, text: found.found ? "✓" : "✗" }));
    }
    body.push(row);
  }
  table.replaceChildren(...body);
}

document.addEventListener("wikigr:tab", (event) => {
  if (event.detail.id === "view-tab-compare") compareSetUp();
});
