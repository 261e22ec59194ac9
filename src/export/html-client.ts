// The script inside the HTML export. It renders everything from the embedded session data, so the
// page and `salvage --from-html` read the very same bytes. Plain ES2019, no libraries, no network:
// user text reaches the DOM through textContent, or as HTML that the exporter rendered and
// sanitized (html-markdown.ts) and the CSP still keeps from running anything. (Written without backticks or dollar-
// brace sequences because it lives in a template literal; \u0060 stands for a backtick.)

export const VIEWER_JS = String.raw`
(function () {
  "use strict";
  // The session is decoded only where it is shown: entry-index holds a light copy of every entry
  // with the byte range of its JSON inside the base64 session-data, so one entry is one small
  // slice to decode. A page without the index decodes the whole session.
  // The viewer runs before the browser has parsed session-data (it comes last in the page): until
  // then entries are drawn from their light copy and drawn again once the data is there.
  var rawData = null, utf8 = new TextDecoder(), waiting = [];
  function ready() { return document.readyState !== "loading" && !!document.getElementById("session-data"); }
  function whenReady(fn) { if (ready()) fn(); else waiting.push(fn); }
  document.addEventListener("DOMContentLoaded", function () { var w = waiting; waiting = []; w.forEach(function (fn) { fn(); }); });
  function raw() { if (rawData === null) rawData = document.getElementById("session-data").textContent.trim(); return rawData; }
  function b64(s) {
    if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(s);
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function wholeSession() { return JSON.parse(utf8.decode(b64(raw()))); }
  var indexNode = document.getElementById("entry-index"), data = null;
  try { data = indexNode ? JSON.parse(indexNode.textContent) : null; } catch (err) { data = null; }
  if (!data || !Array.isArray(data.entries)) data = wholeSession();
  var header = data.header || {}, entries = data.entries || [];
  // The full entry behind a light one (the light one itself when the page has no index).
  function load(e) {
    var o = e._o;
    if (!o) return e;
    if (!ready()) return null;
    var from = Math.floor(o[0] / 3) * 3, to = Math.ceil(o[1] / 3) * 3;
    var bytes = b64(raw().slice(from / 3 * 4, to / 3 * 4));
    var full = JSON.parse(utf8.decode(bytes.subarray(o[0] - from, o[1] - from)));
    return full && typeof full === "object" ? full : e;
  }
  entries.forEach(function (e, i) { e._n = i; });
  var byId = new Map(), children = new Map(), labels = new Map();
  children.set(null, []);
  entries.forEach(function (e) { byId.set(e.id, e); });
  entries.forEach(function (e) {
    var p = e.parentId && e.parentId !== e.id && byId.has(e.parentId) ? e.parentId : null;
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(e);
    if (e.type === "label" && e.targetId) { if (e.label) labels.set(e.targetId, e.label); else labels.delete(e.targetId); }
  });
  var leafId = data.leafId && byId.has(data.leafId) ? data.leafId : (entries.length ? entries[entries.length - 1].id : null);
  var state = { leafId: leafId, filter: "default", toolsExpanded: false };
  // Each tool call by id (the tree names a tool result by its call); context edits on the shown branch.
  var callsById = new Map(), edits = new Map();
  entries.forEach(function (e) {
    var m = msg(e);
    if (m && m.role === "assistant") blocks(m.content).forEach(function (b) { if (b.type === "toolCall" && b.id !== undefined) callsById.set(b.id, b); });
  });

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function kids(id) { return children.get(id) || []; }
  function pathTo(id) {
    var out = [], seen = new Set(), cur = byId.get(id);
    while (cur && !seen.has(cur.id)) { seen.add(cur.id); out.push(cur); cur = cur.parentId ? byId.get(cur.parentId) : undefined; }
    return out.reverse();
  }
  // The newest leaf below an entry: where "switch to this branch" should land.
  function latestLeaf(id) {
    var best = id, bestIndex = -1, stack = [id], seen = new Set();
    while (stack.length) {
      var cur = stack.pop();
      if (seen.has(cur)) continue;
      seen.add(cur);
      var k = kids(cur);
      if (!k.length) { var i = byId.get(cur)._n; if (i > bestIndex) { bestIndex = i; best = cur; } }
      k.forEach(function (c) { stack.push(c.id); });
    }
    return best;
  }
  function msg(e) { return e && e.type === "message" && e.message && typeof e.message === "object" ? e.message : null; }
  function kind(e) { var m = msg(e); return m ? String(m.role) : e.type; }
  function blocks(content) {
    if (typeof content === "string") return [{ type: "text", text: content }];
    return Array.isArray(content) ? content.filter(function (b) { return b && typeof b === "object"; }) : [];
  }
  function textOf(content) { return blocks(content).filter(function (b) { return b.type === "text"; }).map(function (b) { return b.text; }).join("\n\n"); }
  function num(v) { return typeof v === "number" && isFinite(v) ? v : 0; }
  // Usage an entry adds to the session's totals, by pi's definition (countedUsage in
  // src/model/stats.ts): an assistant message's, a tool result's, a usage entry's of any kind, a
  // compaction's or branch summary's.
  function usageOf(e) {
    var m = msg(e);
    if (m) return (m.role === "assistant" || m.role === "toolResult") && m.usage && typeof m.usage === "object" ? m.usage : null;
    return (e.type === "usage" || e.type === "compaction" || e.type === "branch_summary") && e.usage && typeof e.usage === "object" ? e.usage : null;
  }
  function usage(e) {
    var u = usageOf(e);
    if (!u) return null;
    var tokens = num(u.input) + num(u.output) + num(u.cacheRead) + num(u.cacheWrite);
    return { tokens: tokens, cost: num(u.cost && u.cost.total), input: num(u.input), output: num(u.output), cacheRead: num(u.cacheRead), cacheWrite: num(u.cacheWrite) };
  }
  function fmtTokens(t) { return t >= 1e6 ? (t / 1e6).toFixed(1) + "M" : t >= 1e3 ? (t / 1e3).toFixed(1) + "k" : String(t); }
  function fmtCost(c) { return c === 0 ? "$0" : c < 0.01 ? "$" + c.toFixed(4) : "$" + c.toFixed(2); }
  // ↑input ↓output R cache-read W cache-write, as pi's own page writes them.
  function fmtBreakdown(u) {
    var parts = [];
    if (u.input) parts.push("\u2191" + fmtTokens(u.input));
    if (u.output) parts.push("\u2193" + fmtTokens(u.output));
    if (u.cacheRead) parts.push("R" + fmtTokens(u.cacheRead));
    if (u.cacheWrite) parts.push("W" + fmtTokens(u.cacheWrite));
    return parts.join(" ") || "0";
  }
  // The exporting user's home dir shows as ~ (a redacted page has it masked already).
  var home = typeof data.home === "string" && data.home.length > 1 ? data.home.replace(/\/+$/, "") : null;
  function shortPath(p) {
    p = String(p);
    return home && (p === home || p.indexOf(home + "/") === 0) ? "~" + p.slice(home.length) : p;
  }
  function localTime(ts) {
    var d = new Date(typeof ts === "number" ? ts : String(ts));
    return isNaN(d.getTime()) ? String(ts) : d.toLocaleString();
  }
  function oneLine(t, max) {
    t = String(t).replace(/\s+/g, " ").trim();
    return t.length > max ? t.slice(0, max - 1) + "\u2026" : t;
  }
  // pi 1.x system messages: the first on a branch holds the prompt, later ones patch it.
  function isSystem(e) { var m = msg(e); return !!m && m.role === "system"; }
  function carriesSystem(e) { return isSystem(e) || (e.type === "compaction" && !!e.systemMessage); }
  function isLeadingSystem(e) {
    var seen = new Set(), cur = e.parentId && e.parentId !== e.id ? byId.get(e.parentId) : undefined;
    while (cur && !seen.has(cur.id)) { seen.add(cur.id); if (carriesSystem(cur)) return false; cur = cur.parentId ? byId.get(cur.parentId) : undefined; }
    return true;
  }
  function sectionsOf(m) { return m.sections && typeof m.sections === "object" && !Array.isArray(m.sections) ? m.sections : {}; }
  function toolList(v) { return Array.isArray(v) ? v.filter(function (t) { return t && typeof t === "object"; }) : []; }
  function systemText(m) {
    var parts = [textOf(m.content)], s = sectionsOf(m);
    Object.keys(s).forEach(function (k) { if (typeof s[k] === "string") parts.push(s[k]); });
    return parts.filter(function (p) { return p && p.length; }).join("\n\n");
  }
  function systemUpdateText(m) {
    var parts = [], t = textOf(m.content), s = sectionsOf(m);
    if (t) parts.push(t);
    Object.keys(s).forEach(function (k) { parts.push(s[k] === null ? "Removed system prompt section \"" + k + "\"." : "Updated system prompt section \"" + k + "\":\n\n" + s[k]); });
    return parts.join("\n\n");
  }
  function describeSystemUpdate(m) {
    var parts = [], s = sectionsOf(m);
    if (textOf(m.content)) parts.push("instructions");
    Object.keys(s).forEach(function (k) { parts.push(s[k] === null ? "-" + k : k); });
    var tools = toolList(m.toolsAdded).map(function (t) { return "+" + t.name; }).concat(toolList(m.toolsRemoved).map(function (t) { return "-" + t.name; }));
    if (tools.length) parts.push("tools " + tools.join(" "));
    return parts.join(", ");
  }
  function callArgs(b) { return b.arguments && typeof b.arguments === "object" ? b.arguments : {}; }
  function callPath(args) { var p = args.file_path !== undefined ? args.file_path : args.path; return typeof p === "string" ? p : null; }
  // A tool call in one line, as pi's tree shows it: "$ ls", "read ~/x.ts:1-20", "grep /pat/".
  function callLine(b) {
    var args = callArgs(b), p = callPath(args);
    if (b.name === "bash" && typeof args.command === "string") return "$ " + args.command;
    if (p !== null) return b.name + " " + shortPath(p) + (b.name === "read" ? lineRange(args) : "");
    var hint = args.pattern || args.command;
    return b.name + (typeof hint === "string" && hint ? " " + hint : "");
  }
  function lineRange(args) {
    if (typeof args.offset !== "number" && typeof args.limit !== "number") return "";
    var from = typeof args.offset === "number" ? args.offset : 1;
    return ":" + from + (typeof args.limit === "number" ? "-" + (from + args.limit - 1) : "");
  }
  // What the tree shows for an entry: a role word and a preview, as pi's page does.
  function treeText(e) {
    var m = msg(e), tag = "", text = "", sk;
    if (m) {
      if (m.role === "assistant") {
        tag = "assistant:";
        text = textOf(m.content).trim();
        if (!text) text = m.stopReason === "aborted" ? "(aborted)" : m.errorMessage ? String(m.errorMessage) : blocks(m.content).some(function (b) { return b.type === "toolCall"; }) ? blocks(m.content).filter(function (b) { return b.type === "toolCall"; }).map(callLine).join(" \u00b7 ") : "(no text)";
      } else if (m.role === "toolResult") {
        var call = callsById.get(m.toolCallId);
        tag = call ? callLine(call) : "[" + (m.toolName || "tool") + "]";
        if (m.isError) text = "(error)";
      } else if (m.role === "bashExecution") { tag = "[bash]:"; text = String(m.command || ""); }
      else if ((sk = skillOf(m))) { tag = "skill:"; text = sk.name + (sk.userMessage ? " \u00b7 user: " + sk.userMessage : ""); }
      else if (m.role === "system") { tag = isLeadingSystem(e) ? "[system prompt]" : "[system update" + (describeSystemUpdate(m) ? ": " + describeSystemUpdate(m) : "") + "]"; }
      else if (m.role === "custom") { tag = "[" + (m.customType || "custom") + "]:"; text = textOf(m.content); }
      else { tag = m.role + ":"; text = textOf(m.content); }
    } else if (e.type === "compaction") { tag = "[compaction: " + Math.round(num(e.tokensBefore) / 1000) + "k tokens]"; }
    else if (e.type === "branch_summary") { tag = "[branch summary]:"; text = e.summary || ""; }
    else if (e.type === "custom_message") { tag = "[" + (e.customType || "extension") + "]:"; text = textOf(e.content); }
    else if (e.type === "model_change") { tag = "[model: " + e.modelId + "]"; }
    else if (e.type === "thinking_level_change") { tag = "[thinking: " + e.thinkingLevel + "]"; }
    else if (e.type === "session_info") { tag = "[session info]:"; text = e.name || ""; }
    else if (e.type === "label") { tag = "[label]:"; text = (e.label || "(removed)") + " \u2192 " + e.targetId; }
    else if (e.type === "context_edit") { tag = "[context " + (e.replacement === null ? "omit" : "replace") + ": " + e.targetId + "]"; }
    else if (e.type === "usage") { tag = "[usage" + (e.kind ? ": " + e.kind : "") + "]"; }
    else if (e.type === "custom") { tag = "[custom" + (e.customType ? ": " + e.customType : "") + "]"; }
    else tag = "[" + e.type + "]";
    return { tag: oneLine(tag, 100), text: oneLine(text, 100) };
  }
  function preview(e) { var t = treeText(e); return t.text ? t.tag + " " + t.text : t.tag; }
  // A skill pi 1.x put into a user message: <skill name=… location=…>, its text, </skill>, then
  // the user's own words (the shape pi writes and its page parses). A light copy carries the
  // parsed name instead (html.ts lightEntry) and the user's words as its text.
  var SKILL_BLOCK = /^<skill name="([^"]+)" location="([^"]+)">\n([\s\S]*?)\n<\/skill>(?:\n\n([\s\S]+))?$/;
  function skillOf(m) {
    if (!m || m.role !== "user") return null;
    if (m.skill && typeof m.skill === "object") return { name: String(m.skill.name), location: String(m.skill.location), content: null, userMessage: textOf(m.content).trim() };
    var text = textOf(m.content);
    if (text.indexOf("<skill name=") !== 0) return null;
    var x = SKILL_BLOCK.exec(text);
    return x ? { name: x[1], location: x[2], content: x[3], userMessage: (x[4] || "").trim() } : null;
  }

  // Markdown rendered and sanitized at export time (html-markdown.ts); a page without it (or an
  // entry missing from it) falls back to the plain rendering below.
  var rendered = {};
  try { rendered = JSON.parse(document.getElementById("rendered-html").textContent) || {}; } catch (err) { rendered = {}; }
  function renderedFor(e, key) {
    var r = Object.prototype.hasOwnProperty.call(rendered, e.id) ? rendered[e.id] : null;
    return r && typeof r[key] === "string" ? r[key] : null;
  }
  // Text: sanitized HTML when the export rendered it; else fenced code becomes <pre><code> and the
  // rest paragraphs with inline code.
  function renderText(text, html) {
    if (typeof html === "string") {
      var md = el("div", "text md");
      md.innerHTML = html;
      return md;
    }
    var box = el("div", "text"), fence = /^(\u0060{3,}|~{3,})([^\n]*)\n([\s\S]*?)\n\1[ \t]*$/gm, last = 0, m;
    function prose(chunk) {
      chunk.split(/\n{2,}/).forEach(function (para) {
        if (!para.trim()) return;
        var p = el("p");
        para.split(/(\u0060[^\u0060\n]+\u0060)/).forEach(function (part, i) {
          if (i % 2 === 1) p.appendChild(el("code", null, part.slice(1, -1)));
          else if (part) p.appendChild(document.createTextNode(part));
        });
        box.appendChild(p);
      });
    }
    while ((m = fence.exec(text))) {
      prose(text.slice(last, m.index));
      var pre = el("pre"), code = el("code", m[2].trim() ? "lang-" + m[2].trim() : null, m[3]);
      pre.appendChild(code);
      box.appendChild(pre);
      last = fence.lastIndex;
    }
    prose(text.slice(last));
    return box;
  }
  function images(content, into) {
    blocks(content).forEach(function (b) {
      if (b.type === "image" && typeof b.data === "string") {
        var img = el("img", "attached");
        img.src = "data:" + (b.mimeType || "image/png") + ";base64," + b.data;
        img.alt = "attached image";
        into.appendChild(img);
      }
    });
  }

  function head(e, role, extra) {
    var h = el("div", "entry-head");
    h.appendChild(el("span", "role", role));
    (extra || []).forEach(function (x) { if (x) h.appendChild(x); });
    if (labels.has(e.id)) h.appendChild(el("span", "label", labels.get(e.id)));
    if (edits.has(e.id)) h.appendChild(el("span", "edited", edits.get(e.id) === null ? "omitted from context" : "replaced in context"));
    if (e.timestamp) { var t = el("span", "time", localTime(e.timestamp)); t.title = String(e.timestamp); h.appendChild(t); }
    h.appendChild(el("span", "mono id", e.id));
    return h;
  }
  function setCode(pre, html) {
    var code = el("code", "hljs");
    code.innerHTML = html;
    pre.textContent = "";
    pre.appendChild(code);
  }

  // A tool call shown whole, as pi shows it: "$ command" or "read path", then its output (the
  // first lines; the rest on request). The output comes from the result entry on this branch.
  var PREVIEW_LINES = { bash: 5, read: 10 };
  function toolCall(b, result) {
    var args = callArgs(b), box = el("div", "tool-call" + (result && result.isError ? " error" : ""));
    box.dataset.toolCallId = b.id;
    var line = el("div", "tool-head mono");
    if (b.name === "bash" && typeof args.command === "string") line.textContent = "$ " + args.command;
    else {
      line.appendChild(el("span", "tool-name", b.name));
      var rest = callLine(b).slice(String(b.name).length);
      if (rest) line.appendChild(el("span", "tool-path", rest));
    }
    if (result && result.isError) line.appendChild(el("span", "error-text", " (error)"));
    box.appendChild(line);
    var isEdit = b.name === "edit", full = result && result.entry ? msg(load(result.entry)) : result;
    // An edit is shown as pi shows it: the diff its result carries (pi's own, with line numbers),
    // else the replacements it asked for as removed and added lines.
    var diff = isEdit ? editDiff(args, full) : null;
    var shownArgs = Object.keys(args).filter(function (k) { return !(b.name === "bash" && k === "command") && !(b.name === "read" && (k === "path" || k === "file_path" || k === "offset" || k === "limit")) && !(isEdit && (k === "path" || k === "file_path" || (diff && (k === "edits" || k === "oldText" || k === "newText")))); });
    if (diff) box.appendChild(diff);
    if (shownArgs.length) {
      var picked = {};
      shownArgs.forEach(function (k) { picked[k] = args[k]; });
      box.appendChild(folded(el("pre", "tool-args"), JSON.stringify(picked, null, 2), 10));
    }
    if (!result) { box.appendChild(el("div", "tool-status", "No result on this branch")); return box; }
    if (!full) { box.appendChild(el("div", "tool-status", "\u2026")); return box; }
    var text = textOf(full.content);
    if (b.name === "bash") text = text.replace(/\s+$/, "");
    // Its diff says what an edit did; the "Successfully replaced…" line adds nothing to it.
    if (diff && diff._fromResult && !full.isError) text = "";
    if (text) box.appendChild(folded(el("pre", "tool-output"), text, PREVIEW_LINES[b.name] || 10, result.entry && renderedFor(result.entry, "head"), result.entry && renderedFor(result.entry, "full")));
    else box.appendChild(el("div", "tool-status", "(no output)"));
    images(full.content, box);
    return box;
  }
  // An edit's changes: the diff in its result's details (pi's format: "+12 line", "-12 line",
  // " 12 line", each with the line number), else each replacement of its arguments as "-" and
  // "+" lines. Long diffs show their first lines and "… (N more lines)", like long output.
  var DIFF_LINES = 40;
  function editDiff(args, result) {
    var details = result && result.details && typeof result.details === "object" ? result.details : null, lines = [], fromResult = false;
    if (details && typeof details.diff === "string" && details.diff) { lines = details.diff.split("\n"); fromResult = true; }
    else {
      var edits = Array.isArray(args.edits) ? args.edits.slice() : [];
      if (typeof args.oldText === "string" || typeof args.newText === "string") edits.push({ oldText: args.oldText, newText: args.newText });
      edits.forEach(function (x) {
        if (!x || typeof x !== "object") return;
        if (lines.length) lines.push("\u22ee");
        if (typeof x.oldText === "string" && x.oldText) x.oldText.split("\n").forEach(function (l) { lines.push("-" + l); });
        if (typeof x.newText === "string" && x.newText) x.newText.split("\n").forEach(function (l) { lines.push("+" + l); });
      });
    }
    if (!lines.length) return null;
    var box = el("div", "tool-diff mono"), at = 0, more = null;
    function draw(until) {
      for (; at < until; at++) {
        var l = lines[at], c = l.charAt(0);
        box.insertBefore(el("div", c === "+" ? "diff-added" : c === "-" ? "diff-removed" : "diff-context", l), more && more.isConnected ? more : null);
      }
    }
    draw(state.toolsExpanded ? lines.length : Math.min(lines.length, DIFF_LINES));
    if (at < lines.length) {
      more = el("button", "show-all", "\u2026 (" + (lines.length - at) + " more lines)");
      more.addEventListener("click", function () { draw(lines.length); more.remove(); });
      box.appendChild(more);
      box.classList.add("fold");
      box._full = lines.join("\n");
      box._unfold = function () { if (more.isConnected) more.click(); };
    }
    box._fromResult = fromResult;
    return box;
  }
  // Long text shows its first lines (highlighted, when the export highlighted them) and
  // "… (N more lines)", which shows the rest. "Expand outputs" shows everything at once.
  var FOLD_CHARS = 8000;
  function folded(pre, text, maxLines, headHtml, fullHtml) {
    var lines = 0, at = 0;
    while (lines < maxLines && at < text.length && at <= FOLD_CHARS) { var nl = text.indexOf("\n", at); if (nl < 0) { at = text.length; break; } at = nl + 1; lines++; }
    var cutAt = Math.min(at, FOLD_CHARS), whole = function () { if (fullHtml) setCode(pre, fullHtml); else pre.textContent = text; };
    if (cutAt >= text.length || state.toolsExpanded) { whole(); return pre; }
    // The highlighted head is the first maxLines lines: usable only when the cut fell there.
    if (headHtml && lines === maxLines && at === cutAt) setCode(pre, headHtml); else pre.textContent = text.slice(0, cutAt).replace(/\n$/, "");
    pre.classList.add("folded");
    var wrap = el("div", "fold");
    wrap.appendChild(pre);
    var restLines = text.slice(cutAt).split("\n").length;
    var more = el("button", "show-all", "\u2026 (" + restLines + " more lines)");
    more.title = "show all " + text.length + " characters";
    more.addEventListener("click", function () { whole(); pre.classList.remove("folded"); more.remove(); });
    wrap.appendChild(more);
    wrap._full = text;
    wrap._unfold = function () { if (more.isConnected) more.click(); };
    return wrap;
  }
  function toolsBlock(title, tools) {
    tools = toolList(tools);
    if (!tools.length) return null;
    var box = el("div", "tools-list");
    box.appendChild(el("div", "tools-title", title));
    tools.forEach(function (t) {
      var item = el("div", "tool-item");
      item.appendChild(el("span", "tool-name", t.name));
      if (t.description) item.appendChild(el("span", "tool-desc", " \u2014 " + t.description));
      var params = t.parameters && typeof t.parameters === "object" && t.parameters.properties && typeof t.parameters.properties === "object" ? t.parameters.properties : null;
      var required = t.parameters && Array.isArray(t.parameters.required) ? t.parameters.required : [];
      if (params) {
        var list = el("ul", "tool-params");
        Object.keys(params).forEach(function (name) {
          var prop = params[name] && typeof params[name] === "object" ? params[name] : {}, li = el("li");
          li.appendChild(el("span", "mono param-name", name));
          li.appendChild(el("span", "param-type", " " + (typeof prop.type === "string" ? prop.type : "any") + (required.indexOf(name) >= 0 ? " required" : " optional")));
          if (prop.description) li.appendChild(el("span", "param-desc", " \u2014 " + prop.description));
          list.appendChild(li);
        });
        item.appendChild(list);
      }
      box.appendChild(item);
    });
    return box;
  }
  function note(e, text) {
    var n = el("div", "entry note", text);
    if (e.timestamp) { var t = el("span", "time", " \u00b7 " + localTime(e.timestamp)); t.title = String(e.timestamp); n.appendChild(t); }
    return n;
  }

  // Folded as pi's page folds it: "[skill] name", then where the skill came from and its text.
  function skillCard(e, sk) {
    var card = el("details", "skill");
    card.open = state.toolsExpanded;
    var sum = el("summary", "skill-title");
    sum.appendChild(el("span", "skill-tag", "[skill] "));
    sum.appendChild(el("span", "skill-name", sk.name));
    card.appendChild(sum);
    card.appendChild(el("div", "skill-location mono", shortPath(sk.location)));
    if (sk.content !== null) card.appendChild(renderText(sk.content, renderedFor(e, "skill")));
    return card;
  }

  function renderEntry(light, ctx) {
    var full = load(light), e = full || light, m = msg(e), k = kind(e), box;
    if (m && m.role === "assistant") {
      var u = usage(e);
      box = el("section", "entry assistant");
      box.appendChild(head(e, "assistant", [m.model ? el("span", "mono", m.model) : null, u ? el("span", "usage", fmtTokens(u.tokens) + " tokens \u00b7 " + fmtCost(u.cost)) : null]));
      blocks(m.content).forEach(function (b, i) {
        if (b.type === "text" && String(b.text || "").trim()) box.appendChild(renderText(String(b.text), renderedFor(e, i)));
        else if (b.type === "thinking" && String(b.thinking || "").trim()) {
          var d = el("div", "thinking");
          d.appendChild(el("div", "thinking-title", "Thinking"));
          d.appendChild(renderText(b.thinking, renderedFor(e, i)));
          box.appendChild(d);
        } else if (b.type === "toolCall") box.appendChild(toolCall(b, ctx.results.get(b.id)));
      });
      if (m.stopReason === "aborted") box.appendChild(el("p", "error-text", "(aborted)" + (m.errorMessage ? " " + m.errorMessage : "")));
      else if (m.errorMessage) box.appendChild(el("p", "error-text", "Error: " + m.errorMessage));
      else if (!box.querySelector(".text, .thinking, .tool-call")) box.appendChild(el("p", "muted", "(no content)"));
    } else if (m && m.role === "toolResult") {
      if (ctx.called.has(m.toolCallId)) return null; // shown inside its tool call
      box = el("section", "entry toolResult");
      box.appendChild(head(e, "tool result: " + m.toolName));
      box.appendChild(folded(el("pre", "tool-output"), textOf(m.content), 10));
    } else if (m && m.role === "bashExecution") {
      box = el("section", "entry bashExecution");
      box.appendChild(head(e, "shell", [el("span", null, "exit " + m.exitCode)]));
      box.appendChild(el("div", "tool-head mono", "$ " + m.command));
      if (m.output) box.appendChild(folded(el("pre", "tool-output"), String(m.output), 10));
    } else if (m && m.role === "system") {
      box = el("section", "entry system");
      var leading = isLeadingSystem(e), changes = leading ? "" : describeSystemUpdate(m);
      box.appendChild(head(e, leading ? "system prompt" : "system prompt update" + (changes ? ": " + changes : "")));
      var st = leading ? systemText(m) : systemUpdateText(m);
      if (st) box.appendChild(folded(el("pre", "system-text"), st, 10));
      [toolsBlock(leading ? "Available tools" : "Tools added", m.toolsAdded), leading ? null : toolsBlock("Tools removed", m.toolsRemoved)].forEach(function (x) { if (x) box.appendChild(x); });
    } else if (m) {
      var hiddenMsg = m.role === "custom" && m.display === false, sk = skillOf(m);
      box = el("section", "entry " + (m.role === "user" ? "user" : "custom") + (hiddenMsg ? " hidden-message" : ""));
      var turn = ctx.turns.get(e.id);
      box.appendChild(head(e, m.role === "custom" ? (m.customType || "extension") : m.role, [turn ? el("span", "turn-usage", "turn: " + fmtTokens(turn.tokens) + " tokens \u00b7 " + fmtCost(turn.cost)) : null, hiddenMsg ? el("span", "hidden-note", "hidden in terminal") : null]));
      if (sk) {
        box.appendChild(skillCard(e, sk));
        if (sk.userMessage) box.appendChild(renderText(sk.userMessage, renderedFor(e, "text")));
      } else box.appendChild(renderText(textOf(m.content), renderedFor(e, "text")));
      images(m.content, box);
    } else if (e.type === "compaction" || e.type === "branch_summary") {
      box = el("section", "entry " + e.type);
      box.appendChild(head(e, e.type === "compaction" ? "compaction" : "branch summary", [e.tokensBefore ? el("span", null, "compacted from " + fmtTokens(e.tokensBefore) + " tokens") : null]));
      box.appendChild(renderText(String(e.summary || ""), renderedFor(e, "summary")));
    } else if (e.type === "custom_message") {
      // display: false is a message pi keeps out of its terminal: shown with "Show hidden" (H).
      var hiddenEntry = e.display === false;
      box = el("section", "entry custom" + (hiddenEntry ? " hidden-message" : ""));
      box.appendChild(head(e, e.customType || "extension", [hiddenEntry ? el("span", "hidden-note", "hidden in terminal") : null]));
      box.appendChild(renderText(textOf(e.content), renderedFor(e, "text")));
    } else if (e.type === "custom") {
      // An extension's data-only entry: never part of the conversation, shown with "Show hidden".
      box = el("section", "entry custom-data hidden-message");
      box.appendChild(head(e, "custom: " + (e.customType || "?"), [el("span", "hidden-note", "data only")]));
      if (e.data !== undefined) box.appendChild(folded(el("pre", "custom-data-json"), JSON.stringify(e.data, null, 2) || String(e.data), 10));
    } else if (e.type === "model_change") box = note(e, "Switched to model: " + e.provider + "/" + e.modelId);
    else if (e.type === "thinking_level_change") box = note(e, "Thinking level: " + e.thinkingLevel);
    else if (e.type === "session_info") box = note(e, "Named: " + (e.name || ""));
    else if (e.type === "usage") { var uu = usage(e); box = note(e, "Usage" + (e.kind ? " (" + e.kind + ")" : "") + ": " + (uu ? fmtBreakdown(uu) + " \u00b7 " + fmtCost(uu.cost) : "-")); }
    else if (e.type === "context_edit") box = note(e, (e.replacement === null ? "Context edit: omitted " : "Context edit: replaced ") + e.targetId);
    else return null;
    box.dataset.id = e.id;
    box.dataset.kind = k;
    box.id = "entry-" + e.id;
    if (!full) whenReady(function () {
      // Drawn from the light copy: draw it again from the full entry, keeping its branch switch.
      if (!box.isConnected) return;
      var again = renderEntry(light, ctx);
      if (!again) return;
      box.querySelectorAll(":scope > .branch-nav").forEach(function (n) { again.appendChild(n); });
      if (box.classList.contains("selected")) again.classList.add("selected");
      box.replaceWith(again);
    });
    return box;
  }

  // At a branch point: which child the shown path takes, and buttons to take another.
  function branchNav(e, siblings, onPath) {
    var idx = siblings.findIndex(function (c) { return onPath.has(c.id); });
    var nav = el("div", "branch-nav");
    nav.dataset.branchPoint = e.id;
    var prev = el("button", "branch-prev", "\u2039"), next = el("button", "branch-next", "\u203a");
    prev.title = "previous branch"; next.title = "next branch";
    var go = function (d) { var t = siblings[(idx + d + siblings.length) % siblings.length]; setLeaf(latestLeaf(t.id), e.id); };
    prev.addEventListener("click", function () { go(-1); });
    next.addEventListener("click", function () { go(1); });
    nav.appendChild(prev);
    nav.appendChild(el("span", "branch-pos", "branch " + (idx < 0 ? "-" : idx + 1) + " of " + siblings.length));
    nav.appendChild(next);
    return nav;
  }

  // The context edits pi 1.x applies on a path, by target: null (omitted) or "replaced". The rule of
  // src/sessions/view.ts appliedEdits: with a compaction on the path, pi's context is the newest
  // one, the entries from its firstKeptEntryId up to it (system messages aside) and all after it;
  // an edit counts only there, the latest per target, on a target there whose kind it can change.
  function appliedEdits(path) {
    var c = -1, first = -1, inContext = new Set(), latest = new Map(), byId = new Map(), out = new Map();
    path.forEach(function (e, i) { byId.set(e.id, e); if (e.type === "compaction") c = i; });
    for (var i = 0; i < c && first < 0; i++) if (path[i].id === path[c].firstKeptEntryId) first = i;
    path.forEach(function (e, i) {
      var m = msg(e);
      if (c < 0 || i >= c || (first >= 0 && i >= first && !(m && m.role === "system"))) inContext.add(e.id);
    });
    path.forEach(function (e) { if (e.type === "context_edit" && typeof e.targetId === "string" && inContext.has(e.id)) latest.set(e.targetId, e); });
    latest.forEach(function (e, target) {
      var t = byId.get(target), m = msg(t);
      if (!t || !inContext.has(target)) return;
      if (e.replacement === null) out.set(target, null);
      else if (t.type === "custom_message" || (m && (m.role === "user" || m.role === "assistant" || m.role === "toolResult"))) out.set(target, "replaced");
    });
    return out;
  }

  var CHUNK = 120, observer = null, drawing = function () {};
  function drawAll() { drawing(); }
  function renderMessages() {
    var path = pathTo(state.leafId), results = new Map(), called = new Set(), turns = new Map(), onPath = new Set();
    var currentTurn = null;
    edits = new Map();
    path.forEach(function (e) {
      onPath.add(e.id);
      var m = msg(e);
      if (m && m.role === "toolResult") results.set(m.toolCallId, { isError: m.isError, entry: e });
      if (m && m.role === "assistant") blocks(m.content).forEach(function (b) { if (b.type === "toolCall") called.add(b.id); });
      if (m && m.role === "user") { currentTurn = { tokens: 0, cost: 0 }; turns.set(e.id, currentTurn); }
      var u = usage(e);
      if (u && currentTurn) { currentTurn.tokens += u.tokens; currentTurn.cost += u.cost; }
    });
    edits = appliedEdits(path);
    var main = document.getElementById("messages");
    main.textContent = "";
    var ctx = { results: results, called: called, turns: turns, onPath: onPath };
    // A long branch is drawn a chunk at a time: the next chunk when the end comes into view (or
    // at once where search, printing or a jump to an entry needs it).
    if (observer) observer.disconnect();
    var sentinel = el("div", "more"), lastBox = null, at = 0;
    drawing = function (limit, untilId) {
      var drawn = 0;
      while (at < path.length && (limit === undefined || drawn < limit)) {
        var e = path[at++];
        var n = renderEntry(e, ctx);
        if (n) {
          main.insertBefore(n, sentinel); drawn++;
          // A hidden message may stay hidden: the first-paint mark and branch switches go on shown ones.
          if (!n.classList.contains("hidden-message")) {
            // Lets a page-load measurement see when the first message was painted (Element Timing).
            if (!lastBox) n.setAttribute("elementtiming", "first-entry");
            lastBox = n;
          }
        }
        // A branch point may be an entry that is not drawn (a label): put the switch on the last drawn one.
        var siblings = kids(e.id);
        if (siblings.length > 1) (lastBox || main).insertBefore(branchNav(e, siblings, onPath), lastBox ? null : sentinel);
        if (untilId && e.id === untilId) break;
      }
      sentinel.textContent = at < path.length ? (path.length - at) + " more entries below…" : "";
      if (at >= path.length && observer) observer.disconnect();
    };
    main.appendChild(sentinel);
    drawing(CHUNK);
    if (at < path.length && typeof IntersectionObserver === "function") {
      observer = new IntersectionObserver(function (seen) { if (seen.some(function (x) { return x.isIntersecting; })) drawing(CHUNK); }, { rootMargin: "800px" });
      observer.observe(sentinel);
    }
    document.getElementById("branch-info").textContent = "branch " + state.leafId + " \u00b7 " + path.length + " entries";
    return onPath;
  }

  // Sidebar tree, drawn as pi draws it: depth grows only where the conversation branches, and
  // each branch starts with a connector (├─, └─) under a gutter (│) that runs down to its last
  // sibling. Each item also keeps its parent's id, for laying out a filtered tree.
  function layout(roots, kidsOf) {
    var out = [], seen = new Set(), stack = [];
    for (var r = roots.length - 1; r >= 0; r--) stack.push({ e: roots[r], parent: null, indent: 0, connector: false, last: true, gutters: [] });
    while (stack.length) {
      var item = stack.pop();
      if (seen.has(item.e.id)) continue;
      seen.add(item.e.id);
      item.prefix = treePrefix(item);
      out.push(item);
      var k = kidsOf(item.e.id), many = k.length > 1;
      var gutters = item.connector ? item.gutters.concat([{ at: item.indent - 1, show: !item.last }]) : item.gutters;
      for (var i = k.length - 1; i >= 0; i--) stack.push({ e: k[i], parent: item.e.id, indent: many ? item.indent + 1 : item.indent, connector: many, last: i === k.length - 1, gutters: gutters });
    }
    return out;
  }
  var treeOrder = layout(kids(null), kids);
  // The tree of the entries a filter shows, laid out anew as pi's page does it: each shown entry
  // hangs from its nearest shown ancestor, so connectors and gutters join the shown nodes and
  // none dangles where hidden ones were. treeOrder has every parent before its children.
  function shownLayout(shown) {
    var nearest = new Map(), shownKids = new Map();
    shownKids.set(null, []);
    treeOrder.forEach(function (item) {
      var p = item.parent, up = p === null ? null : shown.has(p) ? p : nearest.get(p);
      if (up === undefined) up = null;
      nearest.set(item.e.id, up);
      if (!shown.has(item.e.id)) return;
      if (!shownKids.has(up)) shownKids.set(up, []);
      shownKids.get(up).push(item.e);
    });
    return layout(shownKids.get(null), function (id) { return shownKids.get(id) || []; });
  }
  function treePrefix(item) {
    var out = "";
    for (var level = 0; level < item.indent; level++) {
      var g = null;
      for (var j = 0; j < item.gutters.length; j++) if (item.gutters[j].at === level) g = item.gutters[j];
      if (g) out += g.show ? "\u2502  " : "   ";
      else if (item.connector && level === item.indent - 1) out += item.last ? "\u2514\u2500 " : "\u251c\u2500 ";
      else out += "   ";
    }
    return out;
  }
  // Entries that only carry settings or data: the Default filter hides them, as pi's page does.
  var SETTINGS = ["label", "custom", "context_edit", "model_change", "thinking_level_change", "usage"];
  function passesFilter(e) {
    var k = kind(e), m = msg(e);
    switch (state.filter) {
      case "all": return true;
      case "user": return k === "user";
      case "labeled": return labels.has(e.id);
      case "no-tools":
        if (k === "toolResult" || k === "bashExecution") return false;
        if (k === "assistant" && !textOf(m.content).trim()) return false;
        return SETTINGS.indexOf(e.type) < 0;
      default:
        if (e.id === state.leafId) return true;
        // An assistant message with only tool calls is shown by its results; errors and aborts stay.
        if (k === "assistant" && !textOf(m.content).trim() && (!m.stopReason || m.stopReason === "stop" || m.stopReason === "toolUse")) return false;
        return SETTINGS.indexOf(e.type) < 0;
    }
  }
  // Worked in slices, so a tree of many thousand entries does not hold up the first messages:
  // first which entries the filter and the tree search show, then (if that hid any) their own
  // layout, then the nodes. A tree of one slice is drawn at once.
  var TREE_SLICE = 2000, treeRun = 0;
  function renderTree(onPath, scrollToLeaf) {
    var list = document.getElementById("tree"), q = document.getElementById("tree-search").value.trim().toLowerCase();
    var run = ++treeRun, at = 0, shown = new Set(), all = true, items = null;
    list.textContent = "";
    (function slice() {
      if (run !== treeRun) return;
      if (!items) {
        var last = Math.min(at + TREE_SLICE, treeOrder.length);
        for (; at < last; at++) {
          var e = treeOrder[at].e;
          if (passesFilter(e) && (!q || preview(e).toLowerCase().indexOf(q) >= 0 || (labels.get(e.id) || "").toLowerCase().indexOf(q) >= 0)) shown.add(e.id);
          else all = false;
        }
        if (at < treeOrder.length) { setTimeout(slice, 0); return; }
        items = all ? treeOrder : shownLayout(shown);
        at = 0;
      }
      var end = Math.min(at + TREE_SLICE, items.length);
      for (; at < end; at++) {
        var item = items[at], li = treeNode(item, onPath);
        list.appendChild(li);
        // The sidebar opens at the current leaf, wherever it is in a long tree.
        if (scrollToLeaf && item.e.id === state.leafId) { var side = document.getElementById("sidebar"); side.scrollTop = Math.max(0, li.offsetTop - side.clientHeight / 2); }
      }
      if (at < items.length) setTimeout(slice, 0);
    })();
  }
  function treeNode(item, onPath) {
    var e = item.e, t = treeText(e);
    var li = el("li", "tree-node" + (onPath.has(e.id) ? " on-path" : "") + (e.id === state.leafId ? " active" : ""));
    li.dataset.id = e.id;
    li.title = e.id + " " + preview(e);
    if (item.prefix) li.appendChild(el("span", "tree-prefix", item.prefix));
    if (onPath.has(e.id)) li.appendChild(el("span", "tree-marker", "\u2022 "));
    if (labels.has(e.id)) { li.appendChild(el("span", "tree-label", labels.get(e.id))); li.appendChild(document.createTextNode(" ")); }
    li.appendChild(el("span", "kind kind-" + kind(e), t.tag));
    if (t.text) { li.appendChild(document.createTextNode(" ")); li.appendChild(el("span", "tree-text", t.text)); }
    li.addEventListener("click", function () {
      document.body.classList.remove("tree-open");
      setLeaf(latestLeaf(e.id), e.id, true);
    });
    return li;
  }
  function setLeaf(id, focusId, fromTree) {
    state.leafId = id;
    var onPath = renderMessages();
    renderTree(onPath, !fromTree);
    runSearch();
    if (focusId) drawing(undefined, focusId);
    var target = focusId && document.getElementById("entry-" + focusId);
    // A hidden message picked in the tree is shown, as pi's page does.
    if (target && target.classList.contains("hidden-message")) setHiddenShown(true);
    if (target) {
      document.querySelectorAll(".entry.selected").forEach(function (n) { n.classList.remove("selected"); });
      target.classList.add("selected");
      target.scrollIntoView({ block: "center" });
    }
  }

  // In-page search over the shown conversation; opens folded blocks that hold a hit.
  var hits = [], hitIndex = -1;
  function clearHits() {
    document.querySelectorAll("mark.hit").forEach(function (mk) { mk.replaceWith(document.createTextNode(mk.textContent)); });
    document.getElementById("messages").normalize();
    hits = [];
    hitIndex = -1;
  }
  function runSearch() {
    clearHits();
    var q = document.getElementById("search").value, count = document.getElementById("search-count");
    if (!q) { count.textContent = ""; return; }
    var lower = q.toLowerCase();
    // Search covers the whole branch, folded and not yet drawn parts included.
    drawAll();
    document.querySelectorAll(".fold").forEach(function (f) { if (f._unfold && f._full.toLowerCase().indexOf(lower) >= 0) f._unfold(); });
    var walker = document.createTreeWalker(document.getElementById("messages"), NodeFilter.SHOW_TEXT), nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue, at = text.toLowerCase().indexOf(lower);
      if (at < 0) return;
      var frag = document.createDocumentFragment(), last = 0;
      while (at >= 0) {
        frag.appendChild(document.createTextNode(text.slice(last, at)));
        var mk = el("mark", "hit", text.slice(at, at + q.length));
        frag.appendChild(mk);
        hits.push(mk);
        last = at + q.length;
        at = text.toLowerCase().indexOf(lower, last);
      }
      frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    });
    hits.forEach(function (mk) { for (var d = mk.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true; });
    count.textContent = hits.length ? "" : "no matches";
    if (hits.length) step(1);
  }
  function step(d) {
    if (!hits.length) return;
    if (hitIndex >= 0) hits[hitIndex].classList.remove("current");
    hitIndex = (hitIndex + d + hits.length) % hits.length;
    hits[hitIndex].classList.add("current");
    hits[hitIndex].scrollIntoView({ block: "center" });
    document.getElementById("search-count").textContent = hitIndex + 1 + " / " + hits.length;
  }

  function renderStats() {
    var models = new Set(), roles = { user: 0, assistant: 0, toolResult: 0, custom: 0 }, tools = 0, compactions = 0, summaries = 0, leaves = 0;
    var total = { tokens: 0, cost: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    entries.forEach(function (e) {
      var m = msg(e), u = usage(e);
      if (!kids(e.id).length) leaves++;
      if (e.type === "compaction") compactions++;
      if (e.type === "branch_summary") summaries++;
      if (e.type === "custom_message") roles.custom++;
      if (u) Object.keys(total).forEach(function (key) { total[key] += u[key]; });
      if (!m) return;
      if (m.role === "user" || m.role === "assistant" || m.role === "toolResult") roles[m.role]++;
      if (m.role === "custom") roles.custom++;
      if (m.role === "assistant") {
        if (m.model) models.add((m.provider ? m.provider + "/" : "") + m.model);
        tools += blocks(m.content).filter(function (b) { return b.type === "toolCall"; }).length;
      }
    });
    var name = null;
    entries.forEach(function (e) { if (e.type === "session_info") name = e.name || null; });
    // Without a name, the title the page was rendered with stays (it names the agent).
    if (name) document.getElementById("title").textContent = name;
    document.title = document.getElementById("title").textContent + " \u2014 pi-guard export";
    var counts = [[roles.user, "user"], [roles.assistant, "assistant"], [roles.toolResult, "tool results"], [roles.custom, "custom"], [compactions, "compactions"], [summaries, "branch summaries"]]
      .filter(function (c) { return c[0]; }).map(function (c) { return c[0] + " " + c[1]; }).join(", ") || "0";
    var stats = document.getElementById("stats");
    [["session", header.id], ["project", header.cwd ? shortPath(header.cwd) : "?"], ["started", header.timestamp ? localTime(header.timestamp) : "?"], ["models", Array.from(models).join(", ") || "-"],
     ["messages", counts], ["tool calls", tools], ["tokens", fmtTokens(total.tokens) + " \u00b7 " + fmtBreakdown(total)], ["cost", fmtCost(total.cost)],
     ["branches", leaves]].concat(header.parentSession ? [["forked from", shortPath(header.parentSession)]] : [])
      .forEach(function (kv) { var s = el("span", "stat stat-" + kv[0].replace(/\s+/g, "-")); s.appendChild(el("strong", null, kv[0] + ": ")); s.appendChild(document.createTextNode(String(kv[1]))); stats.appendChild(s); });
    document.querySelector(".stat-tokens").title = "\u2191 input, \u2193 output, R cache read, W cache write";
  }

  // Messages pi keeps out of its terminal (display: false) and extensions' data-only entries.
  function setHiddenShown(shown) {
    document.body.classList.toggle("show-hidden", shown);
    var b = document.getElementById("toggle-hidden");
    b.setAttribute("aria-pressed", String(shown));
    b.textContent = shown ? "Hide hidden messages" : "Show hidden messages";
  }
  // Where a key types text (a search field), not a checkbox or button that only has the focus.
  function isEditable(n) {
    return !!n && (n.tagName === "TEXTAREA" || n.tagName === "SELECT" || n.isContentEditable || (n.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset)$/.test(n.type)));
  }
  function setupControls() {
    var body = document.body;
    document.getElementById("toggle-thinking").addEventListener("change", function (ev) { body.classList.toggle("hide-thinking", !ev.target.checked); });
    document.getElementById("toggle-tools").addEventListener("change", function (ev) { body.classList.toggle("hide-tools", !ev.target.checked); });
    document.getElementById("expand-tools").addEventListener("click", function (ev) {
      var expanded = state.toolsExpanded = !state.toolsExpanded;
      if (expanded) {
        document.querySelectorAll(".fold").forEach(function (f) { f._unfold(); });
        document.querySelectorAll("details.skill").forEach(function (d) { d.open = true; });
      } else { renderMessages(); runSearch(); }
      ev.target.textContent = expanded ? "Shorten outputs" : "Expand outputs";
    });
    document.getElementById("toggle-hidden").addEventListener("click", function () { setHiddenShown(!body.classList.contains("show-hidden")); });
    // pi's keys (T thinking, O outputs, H hidden messages) and search keys: / to search, N and
    // Shift+N for the next and previous match, Esc to clear the search and close the tree.
    // Typing in a field is left alone, as are keys with Ctrl, Alt or Meta.
    document.addEventListener("keydown", function (ev) {
      var search = document.getElementById("search");
      if (ev.key === "Escape") {
        body.classList.remove("tree-open");
        if (search.value) { search.value = ""; runSearch(); }
        if (document.activeElement === search) search.blur();
        return;
      }
      if (ev.ctrlKey || ev.metaKey || ev.altKey || isEditable(document.activeElement)) return;
      var key = ev.key.toLowerCase(), action = null;
      if (key === "t") action = function () { document.getElementById("toggle-thinking").click(); };
      else if (key === "o") action = function () { document.getElementById("expand-tools").click(); };
      else if (key === "h") action = function () { setHiddenShown(!body.classList.contains("show-hidden")); };
      else if (ev.key === "/") action = function () { search.focus(); search.select(); };
      else if (key === "n") action = function () { step(ev.shiftKey ? -1 : 1); };
      if (!action) return;
      ev.preventDefault();
      action();
    });
    // On a narrow window the tree is folded behind this button.
    document.getElementById("tree-toggle").addEventListener("click", function () { body.classList.toggle("tree-open"); });
    document.getElementById("theme-toggle").addEventListener("click", function () {
      var root = document.documentElement, dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
      root.dataset.theme = dark ? "light" : "dark";
    });
    var search = document.getElementById("search"), timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(runSearch, 150); });
    search.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { ev.preventDefault(); if (timer) { clearTimeout(timer); timer = null; runSearch(); } else step(ev.shiftKey ? -1 : 1); } });
    document.getElementById("search-next").addEventListener("click", function () { step(1); });
    document.getElementById("search-prev").addEventListener("click", function () { step(-1); });
    document.getElementById("tree-search").addEventListener("input", function () { renderTree(new Set(pathTo(state.leafId).map(function (e) { return e.id; }))); });
    document.querySelectorAll(".filters button").forEach(function (b) {
      b.addEventListener("click", function () {
        state.filter = b.dataset.filter;
        document.querySelectorAll(".filters button").forEach(function (x) { x.classList.toggle("selected", x === b); });
        renderTree(new Set(pathTo(state.leafId).map(function (e) { return e.id; })));
      });
    });
    // The whole session as pi's JSONL (every branch), built in the page: no request is made.
    document.getElementById("download-jsonl").addEventListener("click", function (ev) {
      if (!ready()) { ev.preventDefault(); return; }
      var whole = wholeSession();
      var lines = [JSON.stringify(whole.header)].concat((whole.entries || []).map(function (e) { return JSON.stringify(e); }));
      var blob = new Blob([lines.join("\n") + "\n"], { type: "application/x-ndjson" });
      var a = ev.currentTarget;
      a.href = URL.createObjectURL(blob);
      a.download = String(header.timestamp || "session").replace(/[:.]/g, "-") + "_" + header.id + ".jsonl";
    });
    // Printing shows every folded block.
    window.addEventListener("beforeprint", function () {
      drawAll();
      document.querySelectorAll("details").forEach(function (d) { if (d._fill) d._fill(); d.open = true; });
      document.querySelectorAll(".fold").forEach(function (f) { f._unfold(); });
    });
  }

  renderStats();
  setupControls();
  setLeaf(state.leafId);
})();
`;
