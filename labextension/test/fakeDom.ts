/**
 * Just enough of the DOM for the card renderers to run in node, without a
 * browser or a dependency: elements, text nodes, attributes, classes and
 * listeners. Tests read a card back through `byClass` and `textContent`.
 * The real DOM is exercised by the browser tests (tests/browser).
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
    this.childNodes = [];
    this.append(...nodes);
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
  readonly attributes = new Map<string, string>();
  readonly listeners: [string, () => void][] = [];

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

  addEventListener(type: string, listener: () => void): void {
    this.listeners.push([type, listener]);
  }

  private setClass(name: string, on: boolean): boolean {
    const names = this.className.split(/\s+/).filter(n => n && n !== name);
    this.className = (on ? [...names, name] : names).join(' ');
    return on;
  }
}

/** Make `document` and `Node` the fakes, for code that builds cards. */
export function installFakeDom(): void {
  const g = globalThis as unknown as Record<string, unknown>;
  g.Node = FakeNode;
  g.document = {
    createElement: (tag: string) => new FakeElement(tag),
    createTextNode: (text: string) => new FakeText(text)
  };
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
