/**
 * Just enough of the DOM for the card renderers to run in node, without a
 * browser or a dependency: elements, text nodes, attributes, classes,
 * listeners, form values and focus. Tests read a card back through `byClass`
 * and `textContent`, and act on it with `fire` (an event to the element's
 * listeners) and `typeInto`. The real DOM is exercised by the browser tests
 * (tests/browser).
 */

export class FakeNode {
  childNodes: FakeNode[] = [];
  parentNode: FakeNode | null = null;

  get textContent(): string {
    return this.childNodes.map(child => child.textContent).join('');
  }

  set textContent(text: string) {
    this.childNodes = [];
    this.append(text);
  }

  append(...nodes: (FakeNode | string)[]): void {
    for (const item of nodes) {
      const node = typeof item === 'string' ? new FakeText(item) : item;
      node.parentNode = this;
      this.childNodes.push(node);
    }
  }

  replaceChildren(...nodes: (FakeNode | string)[]): void {
    for (const child of this.childNodes) {
      child.parentNode = null;
    }
    this.childNodes = [];
    this.append(...nodes);
  }

  contains(node: unknown): boolean {
    for (let n = node as FakeNode | null; n; n = n.parentNode) {
      if (n === this) return true;
    }
    return false;
  }

  /** In the document: its topmost ancestor is the fake document's body. */
  get isConnected(): boolean {
    let n: FakeNode = this;
    while (n.parentNode) n = n.parentNode;
    return n === fakeDocument.body;
  }

  querySelector(selector: string): FakeElement | null {
    // Only `.class` selectors: all the renderers use.
    return byClass(this, selector.replace(/^\./, ''))[0] ?? null;
  }
}

export class FakeText extends FakeNode {
  constructor(public data: string) {
    super();
  }

  get textContent(): string {
    return this.data;
  }

  set textContent(text: string) {
    this.data = text;
  }
}

export class FakeElement extends FakeNode {
  className = '';
  hidden = false;
  title = '';
  value = '';
  checked = false;
  disabled = false;
  isContentEditable = false;
  scrolledIntoView = 0;
  readonly attributes = new Map<string, string>();
  readonly listeners: [string, (event: FakeEvent) => void][] = [];

  constructor(readonly tagName: string) {
    super();
  }

  readonly classList = {
    add: (name: string) => this.setClass(name, true),
    remove: (name: string) => this.setClass(name, false),
    toggle: (name: string, force?: boolean) =>
      this.setClass(name, force ?? !this.classList.contains(name)),
    contains: (name: string) => this.className.split(/\s+/).includes(name)
  };

  get open(): boolean {
    return this.attributes.has('open');
  }

  set open(value: boolean) {
    if (value) {
      this.attributes.set('open', '');
    } else {
      this.attributes.delete('open');
    }
  }

  setAttribute(name: string, value: string): void {
    this.attributes.set(name, value);
  }

  getAttribute(name: string): string | null {
    return this.attributes.get(name) ?? null;
  }

  addEventListener(type: string, listener: (event: FakeEvent) => void): void {
    this.listeners.push([type, listener]);
  }

  focus(): void {
    fakeDocument.activeElement = this;
  }

  scrollIntoView(): void {
    this.scrolledIntoView++;
  }

  private setClass(name: string, on: boolean): boolean {
    const names = this.className.split(/\s+/).filter(n => n && n !== name);
    this.className = (on ? [...names, name] : names).join(' ');
    return on;
  }
}

/** An event as the listeners see it; `stopped` records stopPropagation. */
export class FakeEvent {
  defaultPrevented = false;
  stopped = false;
  constructor(
    readonly type: string,
    readonly key = '',
    readonly shiftKey = false
  ) {}
  preventDefault(): void {
    this.defaultPrevented = true;
  }
  stopPropagation(): void {
    this.stopped = true;
  }
}

export const fakeDocument = {
  body: null as unknown as FakeElement,
  activeElement: null as FakeElement | null,
  createElement: (tag: string) => new FakeElement(tag.toUpperCase()),
  createTextNode: (text: string) => new FakeText(text)
};

/** Make `document` and `Node` the fakes, for code that builds cards. */
export function installFakeDom(): void {
  const g = globalThis as unknown as Record<string, unknown>;
  g.Node = FakeNode;
  fakeDocument.body = new FakeElement('BODY');
  fakeDocument.activeElement = null;
  g.document = fakeDocument;
}

/** Send `event` to `element`'s listeners for its type, then to its ancestors' until stopped. */
export function fire(element: FakeElement, event: FakeEvent): FakeEvent {
  for (let n: FakeNode | null = element; n && !event.stopped; n = n.parentNode) {
    if (n instanceof FakeElement) {
      n.listeners.filter(([type]) => type === event.type).forEach(([, listener]) => listener(event));
    }
  }
  return event;
}

export function click(element: FakeElement): void {
  fire(element, new FakeEvent('click'));
}

export function press(element: FakeElement, key: string, shiftKey = false): FakeEvent {
  return fire(element, new FakeEvent('keydown', key, shiftKey));
}

/** Set a text box's value as typing would, with its `input` event. */
export function typeInto(element: FakeElement, value: string): void {
  element.value = value;
  fire(element, new FakeEvent('input'));
}

/** Every element under `root` (itself included) that has the class `name`, in order. */
export function byClass(root: unknown, name: string): FakeElement[] {
  const found: FakeElement[] = [];
  const walk = (node: FakeNode) => {
    if (node instanceof FakeElement && node.classList.contains(name)) {
      found.push(node);
    }
    node.childNodes.forEach(walk);
  };
  walk(root as FakeNode);
  return found;
}
