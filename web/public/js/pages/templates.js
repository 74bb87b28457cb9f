// Templates: every template by name with its YAML; admins set (create or replace) and delete
// one. GET /api/v1/templates; PUT /api/v1/templates/{name} with the YAML as the body;
// DELETE /api/v1/templates/{name}. The master checks a template as it checks a config and its
// refusal is shown in its words.

import { api, describeError, getSession } from '../api.js';
import { confirmDialog, el, errorBox, fill, table } from '../util.js';

export function templatesPage(main, params, ctx) {
  const admin = !!getSession()?.admin;
  const status = el('div', { 'aria-live': 'polite' });
  const list = el('div', { id: 'templates' });
  const view = el('div', { id: 'template-view' });
  const editor = admin ? templateEditor(status, () => load()) : null;
  fill(main, el('h1', {}, 'Templates'), status, list, view,
    editor ? el('section', { 'aria-labelledby': 'set-title' }, el('h2', { id: 'set-title' }, 'Set a template'), editor.form)
      : el('p', { class: 'muted' }, 'Admins set and delete templates.'));

  let templates = [];
  const show = (t) => {
    fill(view, el('h2', {}, `Template ${t.name}`), el('pre', { class: 'config', tabindex: '0' }, t.config));
    if (editor) editor.load(t);
  };
  async function load() {
    try {
      templates = (await api('/templates', { signal: ctx.signal })).templates;
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not read the templates: ${describeError(e)}`));
      return;
    }
    fill(list, table([
      { title: 'Name', cell: (t) => el('button', { type: 'button', class: 'link', onclick: () => show(t) }, t.name) },
      { title: 'Lines', class: 'num', cell: (t) => t.config.split('\n').filter(Boolean).length },
      ...(admin ? [{ title: 'Actions', cell: (t) => deleteButton(t, status, load) }] : []),
    ], templates, { empty: 'No templates: an experiment config names one with template: NAME.', caption: 'Templates' }));
  }
  load();
}

function deleteButton(t, status, reload) {
  return el('button', {
    type: 'button', class: 'danger', 'aria-label': `Delete template ${t.name}`,
    onclick: async () => {
      if (!(await confirmDialog(`Delete template ${t.name}? Experiments that used it keep their merged config.`, `Delete ${t.name}`))) return;
      try {
        await api(`/templates/${encodeURIComponent(t.name)}`, { method: 'DELETE' });
        status.replaceChildren();
      } catch (e) {
        status.replaceChildren(errorBox(`Could not delete template ${t.name}: ${describeError(e)}`));
      }
      reload();
    },
  }, 'Delete');
}

function templateEditor(status, reload) {
  const name = el('input', { id: 'template-name', required: true, pattern: '[A-Za-z0-9._\\-]{1,128}' });
  const yaml = el('textarea', { id: 'template-yaml', rows: '12', required: true, spellcheck: 'false' });
  const form = el('form', { class: 'editor' },
    el('label', { for: 'template-name' }, 'Name'), name,
    el('label', { for: 'template-yaml' }, 'YAML (any part of an experiment config)'), yaml,
    el('div', {}, el('button', { type: 'submit', id: 'template-save' }, 'Save template')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api(`/templates/${encodeURIComponent(name.value)}`, { method: 'PUT', text: yaml.value });
      status.replaceChildren(el('p', { class: 'ok', role: 'status' }, `Template ${name.value} saved.`));
      reload();
    } catch (e) {
      status.replaceChildren(errorBox(`Could not save template ${name.value}: ${describeError(e)}`));
    }
  });
  return { form, load: (t) => { name.value = t.name; yaml.value = t.config; } };
}
