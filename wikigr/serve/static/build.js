// The build view of the page (index.html #view-build): see docs/serve.md, "Build". Uses app.js's
// helpers ($, el, t, plural, api, events, page, loadPacks, packSize). A build, an update and a
// removal each run as a job on the server: its progress events stream here, and Cancel stops it.
"use strict";

(() => {

const build = {
  drawn: false,
  readOnly: false,
  job: null, // the job followed now
  files: [], // chosen or dropped files, uploaded when the build starts
  stages: new Map(), // stage -> its row in the progress list
};

// The stages of the library's progress events (wikigr.progress), as the page names them.
const BUILD_STAGES = {
  crawl: t("build.stage_crawl"),
  fetch: t("build.stage_fetch"),
  embed: t("build.stage_embed"),
  graph: t("build.stage_graph"),
  read: t("build.stage_read"),
  write: t("build.stage_write"),
};

function buildStatus(message, isError = false) {
  const box = $("build-status");
  box.textContent = message;
  box.classList.toggle("error", isError);
}

function field(label, control, hint) {
  const parts = [label, control];
  if (hint) parts.push(el("span", { class: "hint", text: hint }));
  return el("label", {}, ...parts);
}

function drawBuildView() {
  const root = $("build-root");
  const parts = [];
  if (build.readOnly) {
    parts.push(el("p", { id: "build-read-only", class: "hint", text: t("build.read_only") }));
  } else {
    const name = el("input", { id: "build-name", required: "", maxlength: "64", pattern: "[a-z0-9]+(-[a-z0-9]+)*", placeholder: t("build.name_placeholder") });
    const urls = el("textarea", { id: "build-urls", rows: "4", placeholder: t("build.urls_placeholder") });
    const seeds = el("textarea", { id: "build-crawl", rows: "2", placeholder: t("build.crawl_placeholder") });
    const crawl = el("details", { id: "build-crawl-options" },
      el("summary", { text: t("build.crawl_options") }),
      el("div", { class: "build-row" },
        field(t("build.max_pages"), el("input", { id: "build-max-pages", type: "number", min: "1", max: "1000", placeholder: "1000" })),
        field(t("build.depth"), el("input", { id: "build-depth", type: "number", min: "0", max: "20", placeholder: "5" })),
        field(t("build.delay"), el("input", { id: "build-delay", type: "number", min: "0", max: "60", step: "0.1", placeholder: "0" }))),
      field(t("build.include"), el("textarea", { id: "build-include", rows: "2" })),
      field(t("build.exclude"), el("textarea", { id: "build-exclude", rows: "2" })));
    const chooser = el("input", { id: "build-files", type: "file", multiple: "", accept: ".html,.htm,.md,.markdown,.txt,.pdf" });
    chooser.addEventListener("change", () => addFiles(chooser.files));
    const drop = el("div", { id: "build-drop", class: "drop", tabindex: "0", role: "group", "aria-label": t("build.files") },
      el("p", { class: "hint", text: t("build.drop_hint") }), chooser, el("ul", { id: "build-file-list", class: "files" }));
    drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (event) => {
      event.preventDefault();
      drop.classList.remove("over");
      addFiles(event.dataTransfer.files);
    });
    const form = el("form", { id: "build-form", autocomplete: "off" },
      el("h2", { text: t("build.heading") }),
      field(t("build.name"), name, t("build.name_hint")),
      field(t("build.urls"), urls),
      field(t("build.crawl"), seeds, t("build.crawl_hint")),
      crawl,
      el("div", { class: "build-files" }, el("span", { class: "label", text: t("build.files") }), drop),
      field(t("build.description"), el("input", { id: "build-description", maxlength: "300" })),
      el("div", { class: "build-row" },
        el("label", { class: "check" }, el("input", { id: "build-graph", type: "checkbox", checked: "" }), t("build.graph")),
        el("label", { class: "check" }, el("input", { id: "build-replace", type: "checkbox" }), t("build.replace"))),
      el("div", { class: "build-row" },
        el("button", { id: "build-submit", type: "submit", text: t("build.submit") }),
        el("button", { id: "build-cancel", type: "button", hidden: "", text: t("build.cancel") })));
    form.addEventListener("submit", startBuild);
    parts.push(form);
  }
  parts.push(
    el("section", { id: "build-job", class: "job", "aria-live": "polite" },
      el("h3", { id: "build-job-title" }),
      el("ul", { id: "build-progress", class: "progress" }),
      el("ul", { id: "build-notes", class: "notes" })),
    el("p", { id: "build-status", role: "status" }),
    el("h2", { text: t("build.packs") }),
    el("table", { id: "build-packs", class: "packs" }));
  root.replaceChildren(...parts);
  if (!build.readOnly) $("build-cancel").addEventListener("click", cancelJob);
  drawPackTable();
}

function addFiles(list) {
  for (const file of list) if (!build.files.some((f) => f.name === file.name)) build.files.push(file);
  const items = build.files.map((file) => {
    const remove = el("button", { type: "button", class: "link", text: t("build.file_remove") });
    remove.addEventListener("click", () => {
      build.files = build.files.filter((f) => f !== file);
      addFiles([]);
    });
    return el("li", {}, el("span", { text: t("build.file", { name: file.name, kb: COUNT.format(Math.ceil(file.size / 1024)) }) }), remove);
  });
  $("build-file-list").replaceChildren(...items);
}

// -- the packs: update, remove (with a confirmation) ---------------------------------------------

function drawPackTable() {
  const table = $("build-packs");
  if (!table) return;
  const rows = page.packs.map((pack) => {
    const actions = el("td", { class: "actions" });
    if (!build.readOnly) {
      const update = el("button", { type: "button", "data-pack": pack.name, class: "update", text: t("build.update") });
      update.addEventListener("click", () => runJob(`/packs/${encodeURIComponent(pack.name)}/update`, "POST", t("build.updating", { name: pack.name })));
      const remove = el("button", { type: "button", "data-pack": pack.name, class: "remove", text: t("build.remove") });
      remove.addEventListener("click", () => confirmRemove(actions, pack.name));
      actions.append(update, remove);
    }
    return el("tr", {}, el("th", { scope: "row", text: pack.name }), el("td", { text: packSize(pack) }), el("td", { text: pack.description || "" }), actions);
  });
  if (!rows.length) rows.push(el("tr", {}, el("td", { class: "hint", text: t("build.no_packs") })));
  table.replaceChildren(...rows);
}

function confirmRemove(cell, name) {
  const yes = el("button", { type: "button", class: "danger confirm-remove", text: t("build.remove_yes") });
  const no = el("button", { type: "button", class: "keep", text: t("build.remove_no") });
  yes.addEventListener("click", () => runJob(`/packs/${encodeURIComponent(name)}`, "DELETE", t("build.removing", { name })));
  no.addEventListener("click", drawPackTable);
  cell.replaceChildren(el("span", { class: "ask", text: t("build.remove_confirm", { name }) }), yes, no);
  no.focus();
}

// -- a build ---------------------------------------------------------------------------------

function lines(id) {
  return $(id).value.split("\n").map((line) => line.trim()).filter((line) => line && !line.startsWith("#"));
}

async function startBuild(event) {
  event.preventDefault();
  if (build.job) return;
  const body = { name: $("build-name").value.trim(), graph: $("build-graph").checked, replace: $("build-replace").checked };
  const urls = lines("build-urls");
  const seeds = lines("build-crawl");
  if (urls.length) body.urls = urls;
  if (seeds.length) {
    body.crawl = seeds;
    for (const [key, id] of [["max_pages", "build-max-pages"], ["depth", "build-depth"], ["delay", "build-delay"]]) {
      if ($(id).value !== "") body[key] = Number($(id).value);
    }
    for (const [key, id] of [["include", "build-include"], ["exclude", "build-exclude"]]) {
      if (lines(id).length) body[key] = lines(id);
    }
  }
  if ($("build-description").value.trim()) body.description = $("build-description").value.trim();
  $("build-submit").disabled = true;
  try {
    if (build.files.length) body.upload = await upload(build.files);
    await runJob("/builds", "POST", t("build.building", { name: body.name }), body);
    if (document.body.dataset.built === body.name) {
      build.files = [];
      addFiles([]);
    }
  } catch (error) {
    buildStatus(error.message, true);
  } finally {
    $("build-submit").disabled = false;
  }
}

// The files, sent one by one to an upload of their own; its id.
async function upload(files) {
  const created = await api("/uploads", { method: "POST" });
  for (const [i, file] of files.entries()) {
    if (file.size > created.max_file_bytes) throw new Error(t("build.too_big", { name: file.name, mb: COUNT.format(created.max_file_bytes / 1048576) }));
    buildStatus(t("build.uploading", { done: i, total: files.length }));
    await api(`/uploads/${created.upload}/${encodeURIComponent(file.name)}`, { method: "PUT", body: file });
  }
  return created.upload;
}

// Start a job (a build, an update, a removal) and follow its events until it ends.
async function runJob(path, method, title, body) {
  if (build.job) return;
  const options = { method };
  if (body) {
    options.headers = { "Content-Type": "application/json" };
    options.body = JSON.stringify(body);
  }
  let job;
  try {
    job = await api(path, options);
  } catch (error) {
    buildStatus(error.message, true);
    drawPackTable();
    return;
  }
  await followJob(job, title);
}

// Follow a job's events (from its first) until it ends; then the packs are listed again.
async function followJob(job, title) {
  build.job = job;
  document.body.dataset.buildJob = job.id;
  document.body.dataset.buildState = "running";
  $("build-job-title").textContent = title;
  $("build-progress").replaceChildren();
  $("build-notes").replaceChildren();
  build.stages.clear();
  if ($("build-cancel")) {
    $("build-cancel").hidden = false;
    $("build-cancel").disabled = false;
  }
  buildStatus(t("build.running"));
  let end = ["failed", { error: t("build.lost") }];
  try {
    const response = await fetch(`${API}/jobs/${encodeURIComponent(job.id)}/events`);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    for await (const [name, data] of events(response)) {
      if (name === "progress") drawProgress(data);
      else if (name === "note") $("build-notes").append(el("li", { text: data.text }));
      else if (name === "done" || name === "failed" || name === "cancelled") end = [name, data];
    }
  } catch (error) {
    end = ["failed", { error: error.message }];
  }
  const [state, data] = end;
  let listed = null; // the lists again (a pack built or removed), then what happened: one change on the page
  await loadPacks().catch((error) => { listed = error; });
  drawPackTable();
  build.job = null;
  if ($("build-cancel")) $("build-cancel").hidden = true;
  if (state === "done") {
    const done = data.removed !== undefined
      ? t("build.removed", { name: data.pack })
      : t("build.done", { name: data.pack, articles: plural("pack.articles", data.articles), chunks: plural("pack.chunks", data.chunks) });
    buildStatus(done);
    for (const failed of data.failed || []) $("build-notes").append(el("li", { class: "low", text: t("build.failed_source", { url: failed.url, error: failed.error }) }));
  } else {
    buildStatus(state === "cancelled" ? t("build.cancelled") : data.error, state !== "cancelled");
  }
  if (listed) buildStatus(listed.message, true);
  if (state === "done" && data.removed === undefined) document.body.dataset.built = data.pack;
  document.body.dataset.buildState = state;
}

function drawProgress(data) {
  let row = build.stages.get(data.stage);
  if (!row) {
    const bar = el("progress", { max: "1", value: "0" });
    row = { bar, count: el("span", { class: "count" }), detail: el("span", { class: "detail" }) };
    $("build-progress").append(el("li", { "data-stage": data.stage }, el("span", { class: "stage", text: BUILD_STAGES[data.stage] || data.stage }), bar, row.count, row.detail));
    build.stages.set(data.stage, row);
  }
  if (data.total > 0) {
    row.bar.max = data.total;
    row.bar.value = data.done;
    row.count.textContent = t("build.count", { done: COUNT.format(data.done), total: COUNT.format(data.total) });
  } else {
    row.bar.removeAttribute("value"); // under way, its total unknown
    row.count.textContent = COUNT.format(data.done);
  }
  row.detail.textContent = data.detail ? truncate(data.detail, 90) : "";
}

async function cancelJob() {
  if (!build.job) return;
  $("build-cancel").disabled = true;
  try {
    await api(`/jobs/${encodeURIComponent(build.job.id)}/cancel`, { method: "POST" });
    buildStatus(t("build.cancelling"));
  } catch (error) {
    buildStatus(error.message, true);
  }
}

// Drawn when the view is first opened; the pack list again each time.
document.addEventListener("wikigr:tab", async (event) => {
  if (event.detail.id !== "view-tab-build") return;
  if (!build.drawn) {
    build.drawn = true;
    try {
      build.readOnly = Boolean((await serverHealth()).read_only);
    } catch (error) {
      build.readOnly = false;
    }
    drawBuildView();
    document.body.dataset.buildReady = "yes";
    // a job started before (another tab, another user of this server): followed here too
    const running = await api("/jobs").then((data) => data.jobs.find((job) => job.kind === "build" && job.state === "running"), () => null);
    if (running && !build.job) {
      const titles = { build: t("build.building", { name: running.key }), update: t("build.updating", { name: running.key }), remove: t("build.removing", { name: running.key }) };
      await followJob(running, titles[running.title.split(" ")[0]] || running.title);
    }
  } else {
    drawPackTable();
  }
});
})();
