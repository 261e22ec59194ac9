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
  function msg(e) { return e.type === "message" && e.message && typeof e.message === "object" ? e.message : null; }
  function kind(e) { var m = msg(e); return m ? String(m.role) : e.type; }
  function blocks(content) {
    if (typeof content === "string") return [{ type: "text", text: content }];
    return Array.isArray(content) ? content.filter(function (b) { return b && typeof b === "object"; }) : [];
  }
  function textOf(content) { return blocks(content).filter(function (b) { return b.type === "text"; }).map(function (b) { return b.text; }).join("\n\n"); }
  function usage(e) {
    var m = msg(e);
    if (!m || m.role !== "assistant" || !m.usage) return null;
    var u = m.usage, n = function (v) { return typeof v === "number" && isFinite(v) ? v : 0; };
    var tokens = typeof u.totalTokens === "number" ? n(u.totalTokens) : n(u.input) + n(u.output) + n(u.cacheRead) + n(u.cacheWrite);
    return { tokens: tokens, cost: n(u.cost && u.cost.total) };
  }
  // What the session's totals count, by pi's definition (countedUsage in src/pi/stats.ts): also
  // tool results with usage, usage entries of any kind, and compaction and branch-summary usage.
  function countedUsage(e) {
    var m = msg(e), u = m ? ((m.role === "assistant" || m.role === "toolResult") && m.usage) : ((e.type === "usage" || e.type === "compaction" || e.type === "branch_summary") && e.usage);
    if (!u || typeof u !== "object") return null;
    var n = function (v) { return typeof v === "number" && isFinite(v) ? v : 0; };
    return { tokens: typeof u.totalTokens === "number" ? n(u.totalTokens) : n(u.input) + n(u.output) + n(u.cacheRead) + n(u.cacheWrite), cost: n(u.cost && u.cost.total) };
  }
  function fmtTokens(t) { return t >= 1e6 ? (t / 1e6).toFixed(1) + "M" : t >= 1e3 ? (t / 1e3).toFixed(1) + "k" : String(t); }
  function fmtCost(c) { return c === 0 ? "$0" : c < 0.01 ? "$" + c.toFixed(4) : "$" + c.toFixed(2); }
  function preview(e) {
    var m = msg(e), t = "";
    if (m) {
      if (m.role === "bashExecution") t = "$ " + m.command;
      else if (m.role === "toolResult") t = m.toolName + ": " + textOf(m.content);
      else t = textOf(m.content) || blocks(m.content).filter(function (b) { return b.type === "toolCall"; }).map(function (b) { return "[" + b.name + "]"; }).join(" ");
    } else t = e.summary || e.label || e.name || (e.type === "model_change" ? e.provider + "/" + e.modelId : e.thinkingLevel || e.customType || "");
    t = String(t).replace(/\s+/g, " ").trim();
    return t.length > 80 ? t.slice(0, 79) + "\u2026" : t;
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
    if (e.timestamp) h.appendChild(el("span", "time", String(e.timestamp).replace("T", " ").replace(/\.\d+Z$/, "Z")));
    h.appendChild(el("span", "mono id", e.id));
    return h;
  }

  function toolCall(b, result) {
    var d = el("details", "tool-call" + (result && result.isError ? " error" : ""));
    d.dataset.toolCallId = b.id;
    var s = el("summary");
    s.appendChild(el("span", "tool-name", b.name));
    var args = b.arguments || {}, hint = args.command || args.path || args.pattern || b.hint || "";
    if (hint) s.appendChild(document.createTextNode(" " + String(hint).split("\n")[0].slice(0, 100)));
    if (result && result.isError) s.appendChild(el("span", "error-text", " (error)"));
    d.appendChild(s);
    // The body (arguments and output, possibly megabytes) is built when first opened.
    d._fill = function () {
      if (!d._fill) return;
      if (!ready()) { whenReady(function () { if (d._fill) d._fill(); }); return; }
      d._fill = null;
      var full = result && result.entry ? msg(load(result.entry)) || result : result;
      d.appendChild(el("div", "tool-args-title", "Arguments"));
      d.appendChild(el("pre", "tool-args", JSON.stringify(args, null, 2)));
      d.appendChild(el("div", "tool-output-title", full ? (full.isError ? "Output (error)" : "Output") : "No result on this branch"));
      if (full) {
        d.appendChild(folded(el("pre", "tool-output"), textOf(full.content) || "(empty)"));
        images(full.content, d);
      }
    };
    d._text = function () {
      var full = result && result.entry ? msg(load(result.entry)) || result : result;
      return JSON.stringify(args, null, 2) + "\n" + (full ? textOf(full.content) : "");
    };
    s.addEventListener("click", function () { if (d._fill) d._fill(); });
    d.addEventListener("toggle", function () { if (d.open && d._fill) d._fill(); });
    // Calls drawn after "Expand tool calls" (a later chunk, another branch) open like the rest.
    if (state.toolsExpanded) { d._fill(); d.open = true; }
    return d;
  }
  // Long output shows its first lines; the rest is added on request.
  var FOLD_LINES = 60, FOLD_CHARS = 8000;
  function folded(pre, text) {
    var lines = 0, at = 0;
    while (lines < FOLD_LINES && at < text.length && at <= FOLD_CHARS) { var nl = text.indexOf("\n", at); if (nl < 0) { at = text.length; break; } at = nl + 1; lines++; }
    var cutAt = Math.min(at, FOLD_CHARS);
    if (cutAt >= text.length) { pre.textContent = text; return pre; }
    pre.textContent = text.slice(0, cutAt);
    pre.classList.add("folded");
    var wrap = el("div", "fold");
    wrap.appendChild(pre);
    var rest = text.length - cutAt, restLines = text.slice(cutAt).split("\n").length;
    var more = el("button", "show-all", "Show all (" + restLines + " more lines, " + rest + " characters)");
    more.addEventListener("click", function () { pre.textContent = text; pre.classList.remove("folded"); more.remove(); });
    wrap.appendChild(more);
    wrap._full = text;
    wrap._unfold = function () { if (more.isConnected) more.click(); };
    return wrap;
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
          var d = el("details", "thinking");
          d.appendChild(el("summary", null, "Thinking"));
          d.appendChild(renderText(b.thinking, renderedFor(e, i)));
          box.appendChild(d);
        } else if (b.type === "toolCall") box.appendChild(toolCall(b, ctx.results.get(b.id)));
      });
      if (m.stopReason === "error" && m.errorMessage) box.appendChild(el("p", "error-text", "Error: " + m.errorMessage));
      if (m.stopReason === "aborted") box.appendChild(el("p", "error-text", "Aborted"));
    } else if (m && m.role === "toolResult") {
      if (ctx.called.has(m.toolCallId)) return null; // shown inside its tool call
      box = el("section", "entry toolResult");
      box.appendChild(head(e, "tool result: " + m.toolName));
      box.appendChild(folded(el("pre", "tool-output"), textOf(m.content)));
    } else if (m && m.role === "bashExecution") {
      box = el("section", "entry bashExecution");
      box.appendChild(head(e, "shell", [el("span", null, "exit " + m.exitCode)]));
      box.appendChild(folded(el("pre"), "$ " + m.command + "\n" + (m.output || "")));
    } else if (m) {
      box = el("section", "entry " + (m.role === "user" ? "user" : "custom"));
      var turn = ctx.turns.get(e.id);
      box.appendChild(head(e, m.role === "custom" ? (m.customType || "extension") : m.role, [turn ? el("span", "turn-usage", "turn: " + fmtTokens(turn.tokens) + " tokens \u00b7 " + fmtCost(turn.cost)) : null]));
      box.appendChild(renderText(textOf(m.content), renderedFor(e, "text")));
      images(m.content, box);
    } else if (e.type === "compaction" || e.type === "branch_summary") {
      box = el("section", "entry " + e.type);
      box.appendChild(head(e, e.type === "compaction" ? "compaction" : "branch summary", [e.tokensBefore ? el("span", null, fmtTokens(e.tokensBefore) + " tokens before") : null]));
      var det = el("details", "summary");
      det.appendChild(el("summary", null, "Summary"));
      det.appendChild(renderText(String(e.summary || ""), renderedFor(e, "summary")));
      box.appendChild(det);
    } else if (e.type === "custom_message") {
      box = el("section", "entry custom");
      box.appendChild(head(e, e.customType || "extension"));
      box.appendChild(renderText(textOf(e.content), renderedFor(e, "text")));
    } else if (e.type === "model_change" || e.type === "thinking_level_change" || e.type === "session_info") {
      box = el("div", "entry note", e.type === "model_change" ? "Model: " + e.provider + "/" + e.modelId : e.type === "session_info" ? "Named: " + (e.name || "") : "Thinking level: " + e.thinkingLevel);
    } else return null;
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

  var CHUNK = 120, observer = null, drawing = function () {};
  function drawAll() { drawing(); }
  function renderMessages() {
    var path = pathTo(state.leafId), results = new Map(), called = new Set(), turns = new Map(), onPath = new Set();
    var currentTurn = null;
    path.forEach(function (e) {
      onPath.add(e.id);
      var m = msg(e);
      if (m && m.role === "toolResult") results.set(m.toolCallId, { isError: m.isError, entry: e });
      if (m && m.role === "assistant") blocks(m.content).forEach(function (b) { if (b.type === "toolCall") called.add(b.id); });
      if (m && m.role === "user") { currentTurn = { tokens: 0, cost: 0 }; turns.set(e.id, currentTurn); }
      var u = usage(e);
      if (u && currentTurn) { currentTurn.tokens += u.tokens; currentTurn.cost += u.cost; }
    });
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
          // Lets a page-load measurement see when the first message was painted (Element Timing).
          if (!lastBox) n.setAttribute("elementtiming", "first-entry");
          main.insertBefore(n, sentinel); lastBox = n; drawn++;
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

  // Sidebar tree: depth grows only where the conversation branches.
  var treeOrder = [];
  (function flatten() {
    var stack = kids(null).slice().reverse().map(function (e) { return { e: e, depth: 0 }; }), seen = new Set();
    while (stack.length) {
      var item = stack.pop();
      if (seen.has(item.e.id)) continue;
      seen.add(item.e.id);
      treeOrder.push(item);
      var k = kids(item.e.id), d = k.length > 1 ? item.depth + 1 : item.depth;
      for (var i = k.length - 1; i >= 0; i--) stack.push({ e: k[i], depth: d });
    }
  })();
  function passesFilter(e) {
    var k = kind(e), m = msg(e);
    switch (state.filter) {
      case "all": return true;
      case "user": return k === "user";
      case "labeled": return labels.has(e.id);
      case "no-tools":
        if (k === "toolResult" || k === "bashExecution") return false;
        if (k === "assistant" && !textOf(m.content).trim()) return false;
        return ["user", "assistant", "custom", "compaction", "branch_summary", "custom_message"].indexOf(k) >= 0;
      default: return ["user", "assistant", "toolResult", "bashExecution", "custom", "compaction", "branch_summary", "custom_message"].indexOf(k) >= 0;
    }
  }
  // Drawn in slices, so a tree of many thousand entries does not hold up the first messages.
  var TREE_SLICE = 2000, treeRun = 0;
  function renderTree(onPath) {
    var list = document.getElementById("tree"), q = document.getElementById("tree-search").value.trim().toLowerCase();
    var run = ++treeRun, at = 0;
    list.textContent = "";
    (function slice() {
      if (run !== treeRun) return;
      var end = Math.min(at + TREE_SLICE, treeOrder.length);
      for (; at < end; at++) {
        var item = treeOrder[at], e = item.e;
        if (!passesFilter(e)) continue;
        var text = preview(e);
        if (q && text.toLowerCase().indexOf(q) < 0 && (labels.get(e.id) || "").toLowerCase().indexOf(q) < 0) continue;
        list.appendChild(treeNode(item, text, onPath));
      }
      if (at < treeOrder.length) setTimeout(slice, 0);
    })();
  }
  function treeNode(item, text, onPath) {
    var e = item.e;
    var li = el("li", "tree-node" + (onPath.has(e.id) ? " on-path" : "") + (e.id === state.leafId ? " active" : ""));
    li.dataset.id = e.id;
    li.style.paddingLeft = 4 + item.depth * 12 + "px";
    li.title = e.id + " " + text;
    li.appendChild(el("span", "kind", kind(e)));
    li.appendChild(document.createTextNode(text));
    if (labels.has(e.id)) li.appendChild(el("span", "tree-label", labels.get(e.id)));
    li.addEventListener("click", function () { setLeaf(latestLeaf(e.id), e.id); });
    return li;
  }
  function setLeaf(id, focusId) {
    state.leafId = id;
    var onPath = renderMessages();
    renderTree(onPath);
    runSearch();
    if (focusId) drawing(undefined, focusId);
    var target = focusId && document.getElementById("entry-" + focusId);
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
    document.querySelectorAll("details.tool-call").forEach(function (d) { if (d._fill && d._text().toLowerCase().indexOf(lower) >= 0) d._fill(); });
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
    var models = new Set(), users = 0, assistants = 0, tools = 0, tokens = 0, cost = 0, compactions = 0, leaves = 0;
    entries.forEach(function (e) {
      var m = msg(e), u = countedUsage(e);
      if (!kids(e.id).length) leaves++;
      if (e.type === "compaction") compactions++;
      if (u) { tokens += u.tokens; cost += u.cost; }
      if (!m) return;
      if (m.role === "user") users++;
      if (m.role === "assistant") {
        assistants++;
        if (m.model) models.add((m.provider ? m.provider + "/" : "") + m.model);
        tools += blocks(m.content).filter(function (b) { return b.type === "toolCall"; }).length;
      }
    });
    var name = null;
    entries.forEach(function (e) { if (e.type === "session_info") name = e.name || null; });
    document.getElementById("title").textContent = name || "pi session " + String(header.id).slice(0, 8);
    document.title = (name || "pi session " + String(header.id).slice(0, 8)) + " \u2014 pi-guard export";
    var stats = document.getElementById("stats");
    [["session", header.id], ["project", header.cwd || "?"], ["started", header.timestamp], ["models", Array.from(models).join(", ") || "-"],
     ["messages", users + " user, " + assistants + " assistant"], ["tool calls", tools], ["tokens", fmtTokens(tokens)], ["cost", fmtCost(cost)],
     ["branches", leaves], ["compactions", compactions]].concat(header.parentSession ? [["forked from", header.parentSession]] : [])
      .forEach(function (kv) { var s = el("span", "stat"); s.appendChild(el("strong", null, kv[0] + ": ")); s.appendChild(document.createTextNode(String(kv[1]))); stats.appendChild(s); });
  }

  function setupControls() {
    var body = document.body;
    document.getElementById("toggle-thinking").addEventListener("change", function (ev) { body.classList.toggle("hide-thinking", !ev.target.checked); });
    document.getElementById("toggle-tools").addEventListener("change", function (ev) { body.classList.toggle("hide-tools", !ev.target.checked); });
    document.getElementById("expand-tools").addEventListener("click", function (ev) {
      var expanded = state.toolsExpanded = !state.toolsExpanded;
      document.querySelectorAll("details.tool-call").forEach(function (d) { if (expanded && d._fill) d._fill(); d.open = expanded; });
      ev.target.textContent = expanded ? "Collapse tool calls" : "Expand tool calls";
    });
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
