// Styles of the HTML export: readable type, light and dark themes (system default, switchable),
// and print rules that drop the chrome and unfold every collapsed block.

export const VIEWER_CSS = `
:root {
  --bg: #fbfbfa; --panel: #f1f0ee; --fg: #1d1d1f; --muted: #6b6b70; --border: #dcdad6;
  --user: #e8f0fe; --assistant: #ffffff; --tool: #f6f4ef; --accent: #2f6feb; --error: #c62828;
  --mark: #ffe066; --mark-current: #ff9f1c; --code: #f3f2ef;
  --diff-add: #e6ffec; --diff-add-fg: #116329; --diff-del: #ffebe9; --diff-del-fg: #a40e26;
  --hl-keyword: #a626a4; --hl-string: #50a14f; --hl-number: #986801; --hl-title: #4078f2; --hl-attr: #c18401;
  color-scheme: light;
}
:root[data-theme="dark"] {
  --bg: #15161a; --panel: #1d1f24; --fg: #e6e6e6; --muted: #9a9ca3; --border: #30333a;
  --user: #1c2a44; --assistant: #1b1d22; --tool: #202228; --accent: #7aa2ff; --error: #ff6b6b;
  --mark: #8a6d00; --mark-current: #c25e00; --code: #24262c;
  --diff-add: #12361f; --diff-add-fg: #7ee2a0; --diff-del: #3d1518; --diff-del-fg: #ffa198;
    --hl-keyword: #c678dd; --hl-string: #98c379; --hl-number: #d19a66; --hl-title: #61afef; --hl-attr: #e5c07b;
  color-scheme: dark;
}
@media (prefers-color-scheme: dark) {
  :root:not([data-theme="light"]) {
    --bg: #15161a; --panel: #1d1f24; --fg: #e6e6e6; --muted: #9a9ca3; --border: #30333a;
    --user: #1c2a44; --assistant: #1b1d22; --tool: #202228; --accent: #7aa2ff; --error: #ff6b6b;
    --mark: #8a6d00; --mark-current: #c25e00; --code: #24262c;
    --diff-add: #12361f; --diff-add-fg: #7ee2a0; --diff-del: #3d1518; --diff-del-fg: #ffa198;
    --hl-keyword: #c678dd; --hl-string: #98c379; --hl-number: #d19a66; --hl-title: #61afef; --hl-attr: #e5c07b;
    color-scheme: dark;
  }
}
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; background: var(--bg); color: var(--fg); }
body { font: 15px/1.6 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; display: grid; grid-template-columns: 320px 1fr; min-height: 100vh; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
#sidebar { position: sticky; top: 0; height: 100vh; overflow: auto; background: var(--panel); border-right: 1px solid var(--border); padding: 12px; }
#sidebar h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 8px 0; }
#tree-search, #search { width: 100%; padding: 6px 8px; border: 1px solid var(--border); border-radius: 6px; background: var(--bg); color: var(--fg); }
.filters { display: flex; flex-wrap: wrap; gap: 4px; margin: 8px 0; }
.filters button, .toolbar button, .branch-nav button { border: 1px solid var(--border); background: var(--bg); color: var(--fg); border-radius: 6px; padding: 2px 8px; cursor: pointer; font-size: 12px; }
.filters button.selected { background: var(--accent); color: #fff; border-color: var(--accent); }
#tree { list-style: none; margin: 0; padding: 0; font-size: 12.5px; }
.tree-node { padding: 1px 4px; border-radius: 4px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; color: var(--muted); }
.tree-node .tree-prefix { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; white-space: pre; color: var(--muted); opacity: .7; }
.tree-node .tree-marker { color: var(--accent); }
.tree-node.active .tree-marker, .tree-node.active .tree-prefix { color: #fff; }
.tree-node:hover { background: var(--border); }
.tree-node.on-path { color: var(--fg); font-weight: 500; }
.tree-node.active { background: var(--accent); color: #fff; }
.tree-node .kind { font-weight: 600; }
.tree-node .kind-user { color: var(--accent); }
.tree-node.active .kind { color: #fff; }
.tree-node .tree-label { background: var(--mark); color: #000; border-radius: 3px; padding: 0 4px; margin-left: 4px; font-size: 11px; }
main { min-width: 0; }
#top { position: sticky; top: 0; z-index: 2; background: var(--bg); border-bottom: 1px solid var(--border); padding: 12px 24px; }
#top h1 { font-size: 20px; margin: 0 0 4px; }
#tree-toggle { display: none; float: left; margin: 0 10px 0 0; border: 1px solid var(--border); background: var(--panel); color: var(--fg); border-radius: 6px; padding: 2px 8px; cursor: pointer; font-size: 13px; }
#stats { color: var(--muted); font-size: 13px; display: flex; flex-wrap: wrap; gap: 4px 16px; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin-top: 8px; font-size: 13px; }
.toolbar #search { width: 240px; }
.toolbar a { color: var(--accent); }
#messages { max-width: 900px; margin: 0 auto; padding: 16px 24px 80px; }
.entry { border: 1px solid var(--border); border-radius: 10px; padding: 10px 14px; margin: 12px 0; background: var(--assistant); }
.entry.user { background: var(--user); }
.entry.toolResult, .entry.bashExecution { background: var(--tool); }
.entry.note { border: none; background: none; padding: 0 14px; color: var(--muted); font-size: 13px; font-style: italic; margin: 4px 0; }
.entry.note .time { font-style: normal; }
.entry.compaction, .entry.branch_summary, .entry.system { border-style: dashed; }
.entry-head .edited { border: 1px solid var(--border); border-radius: 3px; padding: 0 5px; font-style: italic; }
.muted { color: var(--muted); }
.tools-list { margin: 8px 0; font-size: 13px; }
.tools-list .tools-title { font-weight: 600; margin-bottom: 2px; }
.tool-item .tool-name { font-weight: 600; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
.tool-item .tool-desc, .tool-params .param-desc, .tool-params .param-type { color: var(--muted); }
.tool-params { margin: 0 0 4px; padding-left: 1.6em; }
.entry.selected { outline: 2px solid var(--accent); }
.entry-head { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: baseline; font-size: 12.5px; color: var(--muted); margin-bottom: 4px; }
.entry-head .role { font-weight: 600; color: var(--fg); font-size: 13.5px; text-transform: capitalize; }
.entry-head .label { background: var(--mark); color: #000; border-radius: 3px; padding: 0 5px; }
.usage, .turn-usage { font-variant-numeric: tabular-nums; }
.text p { margin: .4em 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.text pre, .tool-call pre, .entry pre { background: var(--code); border: 1px solid var(--border); border-radius: 6px; padding: 8px 10px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 480px; }
.text code { background: var(--code); padding: 0 3px; border-radius: 3px; }
.text.md p { white-space: normal; }
.text.md h1, .text.md h2, .text.md h3, .text.md h4 { margin: .8em 0 .3em; line-height: 1.3; }
.text.md h1 { font-size: 1.4em; } .text.md h2 { font-size: 1.25em; } .text.md h3 { font-size: 1.1em; }
.text.md ul, .text.md ol { margin: .4em 0; padding-left: 1.6em; }
.text.md blockquote { margin: .5em 0; padding-left: 10px; border-left: 3px solid var(--border); color: var(--muted); }
.text.md table { border-collapse: collapse; margin: .5em 0; display: block; overflow: auto; }
.text.md th, .text.md td { border: 1px solid var(--border); padding: 3px 8px; }
.text.md th { background: var(--panel); }
.text.md pre code { background: none; padding: 0; }
.text.md a { color: var(--accent); }
.text.md img { max-width: 100%; }
/* Code highlighting (highlight.js classes, rendered at export time). */
.hljs-keyword, .hljs-selector-tag, .hljs-literal, .hljs-doctag { color: var(--hl-keyword); }
.hljs-string, .hljs-regexp, .hljs-addition, .hljs-attribute { color: var(--hl-string); }
.hljs-number, .hljs-symbol, .hljs-bullet, .hljs-variable, .hljs-template-variable { color: var(--hl-number); }
.hljs-comment, .hljs-quote, .hljs-meta { color: var(--muted); font-style: italic; }
.hljs-title, .hljs-section, .hljs-name, .hljs-built_in, .hljs-type, .hljs-class { color: var(--hl-title); }
.hljs-attr, .hljs-params, .hljs-property { color: var(--hl-attr); }
.hljs-deletion { color: var(--error); }
.hljs-emphasis { font-style: italic; } .hljs-strong { font-weight: 600; }
.fold .show-all { margin: 2px 0 6px; border: 1px solid var(--border); background: var(--bg); color: var(--accent); border-radius: 6px; padding: 2px 8px; cursor: pointer; font-size: 12px; }
#messages .more { color: var(--muted); font-size: 13px; text-align: center; padding: 12px; }
details { margin: 6px 0; }
details > summary { cursor: pointer; color: var(--muted); font-size: 13px; }
.tool-call { border: 1px solid var(--border); border-radius: 6px; padding: 4px 8px; margin: 6px 0; background: var(--tool); }
.tool-call .tool-head, .entry .tool-head { white-space: pre-wrap; overflow-wrap: anywhere; font-weight: 600; }
.tool-call .tool-path { font-weight: 400; }
.tool-call.error { border-color: var(--error); }
.tool-call pre { margin: 4px 0; }
.tool-call .tool-status { color: var(--muted); font-size: 12.5px; }
/* An edit as a diff: removed and added lines coloured as pi's page colours them. */
.tool-diff { margin: 4px 0; border: 1px solid var(--border); border-radius: 6px; padding: 4px 0; background: var(--code); overflow: auto; }
.tool-diff > div { white-space: pre-wrap; overflow-wrap: anywhere; padding: 0 10px; }
.tool-diff .diff-added { background: var(--diff-add); color: var(--diff-add-fg); }
.tool-diff .diff-removed { background: var(--diff-del); color: var(--diff-del-fg); }
.tool-diff .diff-context { color: var(--muted); }
.tool-diff .show-all { margin: 4px 10px; }
.thinking { border-left: 3px solid var(--border); padding-left: 8px; margin: 6px 0; }
.thinking .thinking-title { color: var(--muted); font-size: 12px; }
.thinking .text, .thinking .text p { color: var(--muted); font-style: italic; }
.error-text { color: var(--error); }
.branch-nav { display: flex; gap: 6px; align-items: center; font-size: 12px; color: var(--muted); margin-top: 6px; }
body.hide-thinking .thinking { display: none; }
body:not(.show-hidden) .hidden-message { display: none; }
.entry-head .hidden-note { border: 1px dashed var(--border); border-radius: 3px; padding: 0 5px; }
.entry.hidden-message { border-style: dotted; }
.help-hint { color: var(--muted); font-size: 12px; margin-top: 4px; }
#toggle-hidden[aria-pressed="true"] { background: var(--accent); color: #fff; border-color: var(--accent); }
details.skill { border: 1px solid var(--border); border-radius: 6px; padding: 4px 8px; background: var(--panel); }
details.skill > summary .skill-name { font-weight: 600; color: var(--fg); }
details.skill .skill-location { color: var(--muted); margin: 2px 0 4px; overflow-wrap: anywhere; }
body.hide-tools .tool-call, body.hide-tools .entry.toolResult, body.hide-tools .entry.bashExecution { display: none; }
mark.hit { background: var(--mark); color: inherit; border-radius: 2px; }
mark.hit.current { background: var(--mark-current); }
img.attached { max-width: 100%; border-radius: 6px; }
/* A narrow window: the tree folds behind the Tree button and opens over the conversation. */
@media (max-width: 900px) {
  body { grid-template-columns: 1fr; }
  #sidebar { display: none; position: fixed; z-index: 5; top: 0; left: 0; width: min(360px, 88vw); height: 100vh; box-shadow: 0 0 24px rgba(0, 0, 0, .25); }
  body.tree-open #sidebar { display: block; }
  #tree-toggle { display: inline-block; }
  #top { padding: 10px 12px; }
  #messages { padding: 12px 10px 60px; }
}
@media print {
  body { display: block; background: #fff; color: #000; font-size: 11pt; }
  #sidebar, .toolbar, .branch-nav, .help-hint { display: none !important; }
  #top { position: static; border: none; }
  .entry { break-inside: avoid-page; border-color: #bbb; background: #fff !important; }
  pre { max-height: none !important; }
  body.hide-thinking .thinking, body.hide-tools .tool-call { display: block; }
}
`;
