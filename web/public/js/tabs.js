// Tabs (WAI-ARIA tab pattern): a tablist of buttons (arrow keys move between them) over panels.
// The chosen tab is kept in the URL's ?tab= so a link opens it.

import { el } from './util.js';

// tabs: [{id, label, panel: Element, onShow?()}]. Returns the element holding both.
export function tabView(tabs, initial) {
  const buttons = tabs.map((t) => el('button', {
    type: 'button', role: 'tab', id: `tab-${t.id}`, 'aria-controls': `panel-${t.id}`,
    dataset: { tab: t.id },
  }, t.label));
  const list = el('div', { role: 'tablist', class: 'tabs', 'aria-label': 'Sections' }, buttons);
  const panels = tabs.map((t) => el('section', {
    role: 'tabpanel', id: `panel-${t.id}`, 'aria-labelledby': `tab-${t.id}`, tabindex: '0',
  }, t.panel));
  const show = (id, focus = false) => {
    tabs.forEach((t, i) => {
      const selected = t.id === id;
      buttons[i].setAttribute('aria-selected', String(selected));
      buttons[i].tabIndex = selected ? 0 : -1;
      panels[i].hidden = !selected;
      if (selected) {
        if (focus) buttons[i].focus();
        if (t.onShow) t.onShow();
      }
    });
    const url = new URL(location.href);
    url.searchParams.set('tab', id);
    history.replaceState(null, '', url.pathname + url.search);
  };
  buttons.forEach((b, i) => {
    b.addEventListener('click', () => show(tabs[i].id));
    b.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (!step) return;
      e.preventDefault();
      show(tabs[(i + step + tabs.length) % tabs.length].id, true);
    });
  });
  const wanted = new URLSearchParams(location.search).get('tab');
  show(tabs.some((t) => t.id === wanted) ? wanted : initial);
  return el('div', { class: 'tabview' }, list, panels);
}
