// The model registry (docs/design/0023): every model with its versions' count, owner and
// labels, and a form to create one (GET, POST /api/v1/models); a model's page with its fields and
// versions, each a checkpoint (GET /api/v1/models/{name}), where its owner or an admin deletes a
// version or the model (DELETE). Checkpoints are registered from the experiment page's
// checkpoints ("Register"). The master's refusals are shown in its words.

import { api, describeError, getSession } from '../api.js';
import { navigate } from '../main.js';
import { confirmDialog, el, errorBox, fill, fmtNum, fmtTime, table } from '../util.js';

const modelPath = (name) => `/models/${encodeURIComponent(name)}`;
const labels = (list) => (list.length ? list.join(', ') : '—');

export function modelsPage(main, params, ctx) {
  const status = el('div', { 'aria-live': 'polite' });
  const list = el('div', { id: 'models' });
  fill(main, el('h1', {}, 'Models'), status, list,
    el('section', { 'aria-labelledby': 'create-title' }, el('h2', { id: 'create-title' }, 'Create a model'),
      createForm(status, () => load())));
  async function load() {
    let models;
    try {
      models = (await api('/models', { signal: ctx.signal })).models;
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not read the models: ${describeError(e)}`));
      return;
    }
    fill(list, table([
      { title: 'Name', cell: (m) => el('a', { href: modelPath(m.name) }, m.name) },
      { title: 'Versions', class: 'num', cell: (m) => fmtNum(m.num_versions) },
      { title: 'Owner', cell: (m) => m.owner },
      { title: 'Updated', cell: (m) => fmtTime(m.updated_ms) },
      { title: 'Labels', cell: (m) => labels(m.labels) },
      { title: 'Description', cell: (m) => m.description || '—' },
    ], models, {
      empty: 'No models yet: create one below, then register a checkpoint from an experiment\'s page.',
      caption: 'Models',
      rowAttrs: (m) => ({ dataset: { key: m.name, model: m.name } }),
    }));
  }
  load();
}

function createForm(status, reload) {
  const name = el('input', { id: 'model-name', required: true, pattern: '[A-Za-z0-9_][A-Za-z0-9._\\-]{0,127}' });
  const description = el('input', { id: 'model-description' });
  const form = el('form', { class: 'editor' },
    el('label', { for: 'model-name' }, 'Name (letters, digits, ".", "_", "-")'), name,
    el('label', { for: 'model-description' }, 'Description'), description,
    el('div', {}, el('button', { type: 'submit', id: 'model-create' }, 'Create model')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('/models', { method: 'POST', body: { name: name.value, description: description.value } });
      status.replaceChildren(el('p', { class: 'ok', role: 'status' }, `Model ${name.value} created.`));
      form.reset();
      reload();
    } catch (e) {
      status.replaceChildren(errorBox(`Could not create model ${name.value}: ${describeError(e)}`));
    }
  });
  return form;
}

export function modelPage(main, [encoded], ctx) {
  const name = decodeURIComponent(encoded);
  const status = el('div', { 'aria-live': 'polite' });
  const body = el('div', { id: 'model' });
  fill(main, el('h1', {}, `Model ${name}`), status, body);
  async function load() {
    let d;
    try {
      d = await api(modelPath(name), { signal: ctx.signal });
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not read model ${name}: ${describeError(e)}`));
      return;
    }
    const session = getSession();
    const mayChange = !!session && (session.admin || session.username === d.model.owner);
    fill(body, modelFields(d.model), el('h2', {}, 'Versions'), table([
      { title: 'Version', class: 'num', cell: (v) => v.version },
      { title: 'Checkpoint', cell: (v) => el('code', {}, v.checkpoint) },
      { title: 'Name', cell: (v) => v.name || '—' },
      { title: 'Registered by', cell: (v) => v.registered_by },
      { title: 'When', cell: (v) => fmtTime(v.created_ms) },
      { title: 'Comment', cell: (v) => v.comment || '—' },
      ...(mayChange ? [{ title: 'Actions', cell: (v) => deleteVersionButton(name, v, status, load) }] : []),
    ], d.versions, {
      empty: 'No versions yet: "Register" on a checkpoint of an experiment\'s page adds one.',
      caption: 'Versions',
      rowAttrs: (v) => ({ dataset: { key: v.version, version: v.version } }),
    }), mayChange ? deleteModelButton(name, status) : null);
  }
  load();
}

function modelFields(m) {
  const row = (k, v) => el('tr', {}, el('th', { scope: 'row' }, k), el('td', {}, v));
  return el('table', { class: 'fields', id: 'model-fields' }, el('caption', {}, 'Model'),
    row('Description', m.description || '—'), row('Owner', m.owner), row('Created', fmtTime(m.created_ms)),
    row('Updated', fmtTime(m.updated_ms)), row('Labels', labels(m.labels)),
    row('Metadata', Object.keys(m.metadata).length ? JSON.stringify(m.metadata) : '—'));
}

function deleteVersionButton(name, v, status, reload) {
  return el('button', {
    type: 'button', class: 'danger', 'aria-label': `Delete version ${v.version}`, dataset: { action: 'delete-version' },
    onclick: async () => {
      if (!(await confirmDialog(`Delete version ${v.version} of ${name}? Its checkpoint stays; the GC may then delete it.`, 'Delete version'))) return;
      try {
        await api(`${modelPath(name)}/versions/${v.version}`, { method: 'DELETE' });
        status.replaceChildren(el('p', { class: 'ok', role: 'status' }, `Version ${v.version} deleted.`));
      } catch (e) {
        status.replaceChildren(errorBox(`Could not delete version ${v.version}: ${describeError(e)}`));
      }
      reload();
    },
  }, 'Delete');
}

function deleteModelButton(name, status) {
  return el('p', {}, el('button', {
    type: 'button', class: 'danger', id: 'model-delete',
    onclick: async () => {
      if (!(await confirmDialog(`Delete model ${name} and all its versions? The checkpoints stay.`, `Delete ${name}`))) return;
      try {
        await api(modelPath(name), { method: 'DELETE' });
        navigate('/models');
      } catch (e) {
        status.replaceChildren(errorBox(`Could not delete model ${name}: ${describeError(e)}`));
      }
    },
  }, 'Delete model'));
}

// "Register" on a checkpoint (the experiment page): a dialog that picks a model and a comment
// and registers the checkpoint as its next version. Resolves to the version, or null.
export async function registerCheckpoint(storageId) {
  let models;
  try {
    models = (await api('/models')).models;
  } catch (e) {
    return { error: `Could not read the models: ${describeError(e)}` };
  }
  if (models.length === 0) return { error: 'No models yet: create one on the Models page first.' };
  const select = el('select', { id: 'register-model', 'aria-label': 'Model' },
    models.map((m) => el('option', { value: m.name }, m.name)));
  const comment = el('input', { id: 'register-comment', 'aria-label': 'Comment' });
  const dialog = el('dialog', { class: 'confirm', 'aria-label': 'Register a checkpoint' },
    el('form', { method: 'dialog' },
      el('p', {}, `Register checkpoint ${storageId} as the next version of`),
      el('label', { for: 'register-model' }, 'Model'), select,
      el('label', { for: 'register-comment' }, 'Comment'), comment,
      el('div', { class: 'buttons' },
        el('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
        el('button', { value: 'ok', type: 'submit', id: 'register-ok' }, 'Register'))));
  const answer = await new Promise((resolve) => {
    dialog.addEventListener('close', () => { resolve(dialog.returnValue); dialog.remove(); });
    document.body.append(dialog);
    dialog.showModal();
    select.focus();
  });
  if (answer !== 'ok') return null;
  try {
    return { version: await api(`${modelPath(select.value)}/versions`, {
      method: 'POST', body: { checkpoint: storageId, comment: comment.value },
    }) };
  } catch (e) {
    return { error: `Could not register checkpoint ${storageId}: ${describeError(e)}` };
  }
}
