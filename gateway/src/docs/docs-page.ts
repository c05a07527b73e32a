import MarkdownIt from 'markdown-it';
import { type DocumentOperation, type OpenApiDocument, type OpenApiMediaType, deref, isReference, operationsOf } from '@platform/service-kit';

function escape(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// CommonMark, with raw HTML in a description escaped rather than passed through, and no bare URL turned
// into a link: the page shows the documents' text, it never grows markup of its own from it.
const commonMark = new MarkdownIt({ html: false, linkify: false });

/** A description of the documents (CommonMark) as HTML. */
function markdown(text: unknown): string {
  return typeof text === 'string' ? commonMark.render(text) : '';
}

/** `#/components/schemas/User` → a link to that schema's section of the page. */
function refLink(ref: unknown): string {
  const name = String(ref).split('/').at(-1) ?? '';
  return `<a href="#schema-${escape(name)}">${escape(name)}</a>`;
}

function schemaOf(content: Record<string, OpenApiMediaType> | undefined): string {
  const schema = Object.values(content ?? {})[0]?.schema ?? {};
  if (isReference(schema)) return refLink(schema.$ref);
  if (schema.type === 'array' && isReference(schema.items)) return `array of ${refLink(schema.items.$ref)}`;
  return Object.keys(schema).length > 0 ? `<code>${escape(JSON.stringify(schema))}</code>` : '';
}

function operation(doc: OpenApiDocument, { method, path, operation: op, parameters, security }: DocumentOperation): string {
  const body = deref(doc, op.requestBody)?.content ?? {};
  const responses = Object.entries(op.responses ?? {}).map(([status, r]) => {
    const response = deref(doc, r);
    return `<tr><td>${escape(status)}</td><td>${markdown(response.description)}</td><td>${schemaOf(response.content)}</td></tr>`;
  });
  return `<section class="op" id="op-${escape(op.operationId ?? `${method}-${path}`)}">
<h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p><strong>${escape(op.summary)}</strong></p>
${markdown(op.description)}
<p class="security">Security: ${escape(security.map((r) => Object.keys(r).join(' + ')).join(' or '))}</p>
${parameters.length > 0 ? `<table><tr><th>Parameter</th><th>In</th><th>Required</th><th>Description</th></tr>${parameters.map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${escape(p.in)}</td><td>${p.required === true ? 'yes' : 'no'}</td><td>${markdown(p.description)}</td></tr>`).join('')}</table>` : ''}
${Object.keys(body).length > 0 ? `<p>Request body: ${schemaOf(body)}</p>` : ''}
<table><tr><th>Status</th><th>Meaning</th><th>Body</th></tr>${responses.join('')}</table>
</section>`;
}

/**
 * A self-contained HTML reference of the API document: no script and nothing fetched from elsewhere,
 * so it works offline and under a strict Content-Security-Policy. Built once, at start.
 */
export function renderDocsPage(doc: OpenApiDocument): string {
  const info = doc.info ?? {};
  const ops = operationsOf(doc).map((entry) => {
    const { method, path, operation: op } = entry;
    return { tag: String(op.tags?.[0] ?? 'Other'), html: operation(doc, entry), title: `${method.toUpperCase()} ${path}`, anchor: String(op.operationId ?? `${method}-${path}`) };
  });
  const tags = [...new Set(ops.map((o) => o.tag))];
  const schemas = Object.entries(doc.components?.schemas ?? {});
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(info.title)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:1rem 2rem;color:#222}
code,pre{font:13px ui-monospace,monospace;background:#f4f4f4;border-radius:3px;padding:0 .2em}
pre{padding:.6em;overflow:auto}table{border-collapse:collapse;width:100%;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}td p{margin:0}
.op{border-top:1px solid #ccc;margin-top:1.5em}.method{color:#fff;border-radius:3px;padding:0 .4em;font-size:13px}
.get{background:#2b7}.post{background:#27b}.patch,.put{background:#b82}.delete{background:#b33}.security{color:#555}
</style></head><body>
<h1>${escape(info.title)} <small>${escape(info.version)}</small></h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a></p>
<nav><ul>${tags.map((t) => `<li>${escape(t)}<ul>${ops.filter((o) => o.tag === t).map((o) => `<li><a href="#op-${escape(o.anchor)}">${escape(o.title)}</a></li>`).join('')}</ul></li>`).join('')}<li><a href="#schemas">Schemas</a></li></ul></nav>
${markdown(info.description)}
${tags.map((t) => `<h2>${escape(t)}</h2>\n${ops.filter((o) => o.tag === t).map((o) => o.html).join('\n')}`).join('\n')}
<h2 id="schemas">Schemas</h2>
${schemas.map(([name, schema]) => `<h3 id="schema-${escape(name)}">${escape(name)}</h3><pre>${escape(JSON.stringify(schema, null, 2))}</pre>`).join('\n')}
</body></html>`;
}
