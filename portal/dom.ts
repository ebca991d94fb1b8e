// A few lines of DOM building instead of a framework: elements are made with text content and
// attributes only (never innerHTML), so nothing the API returns can become markup.

type Attrs = Record<string, string | number | boolean | null | undefined>;
export type Child = Node | string | number | null | undefined | false;

function fill<E extends Element>(element: E, attrs: Attrs, children: Child[]): E {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'number' ? String(child) : child);
  }
  return element;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  return fill(document.createElement(tag), attrs, children);
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  return fill(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, children);
}

/** A button that runs `action`; its text can carry words only screen readers need (`hidden`). */
export function button(text: string, action: () => void, attrs: Attrs = {}, hidden?: string): HTMLButtonElement {
  const element = h('button', { type: 'button', ...attrs }, text, hidden ? h('span', { class: 'visually-hidden' }, ` ${hidden}`) : null);
  element.addEventListener('click', action);
  return element;
}

export function byId<E extends HTMLElement = HTMLElement>(id: string): E {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing from the page`);
  return element as E;
}

/**
 * Replaces a container's content. Content is redrawn as data arrives; the keyboard user keeps
 * their place: the element with the same `data-focus` key as the one focused before gets the focus.
 */
export function replaceContent(container: Element, ...children: Child[]): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && container.contains(active) ? active.dataset.focus : undefined;
  container.replaceChildren();
  fill(container, {}, children);
  if (key === undefined) return;
  const again = container.querySelector<HTMLElement>(`[data-focus="${CSS.escape(key)}"]`);
  (again ?? (container.closest('section')?.querySelector<HTMLElement>('h2') ?? null))?.focus();
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A <time> for an ISO 8601 date, shown in the reader's locale. */
export function time(iso: string): HTMLTimeElement {
  return h('time', { datetime: iso }, dateTime.format(new Date(iso)));
}

export const formatTime = (ms: number): string => dateTime.format(new Date(ms));
