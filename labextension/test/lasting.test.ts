/**
 * A session that lasts, as the cards show it: the marks between steps (a task
 * began, the user said, a rewind, a condensation, a resume), steps a rewind
 * undid, a proposal staged again after a resume (and a stale one), the rules
 * files, and the live panel's message box: Enter sends and clears, nothing
 * empty is sent, the key goes nowhere else, the text survives a redraw, and a
 * card that starts waiting leaves the focus to someone writing a message.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseMark, parseSession, parseStep } from '../src/schema';
import { CardModel, LiveCard } from '../src/render/liveCard';
import { markCard } from '../src/render/markCard';
import { BoxMessage, boxMessage, MessageBox, typingInBox } from '../src/render/messageBox';
import { sessionCard } from '../src/render/sessionCard';
import { stepCard } from '../src/render/stepCard';
import { byClass, FakeElement, FakeEvent, fakeDocument, fire, installFakeDom, press, typeInto } from './fakeDom';

installFakeDom();

function step(number: number, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    session: 's1',
    step: number,
    tool: 'run',
    kind: 'command',
    status: 'committed',
    arguments: { command: 'pytest' },
    ...fields
  };
}

function mark(kind: string, title: string, text: string, at: number): Record<string, unknown> {
  return { kind, title, text, branch: 0, at };
}

function session(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { version: 1, session: 's1', task: 'fix it', model: 'm', end_reason: '', ...fields };
}

const el = (node: HTMLElement) => node as unknown as FakeElement;

describe('payloads of a lasting session', () => {
  it('read old payloads with the new fields at their defaults', () => {
    const parsed = parseStep(step(1));
    assert.ok(parsed.ok);
    assert.deepEqual(
      [parsed.value.branch, parsed.value.rewound, parsed.value.restaged, parsed.value.stale],
      [0, false, false, null]
    );
    const s = parseSession(session());
    assert.ok(s.ok);
    assert.deepEqual([s.value.marks, s.value.tasks, s.value.rules, s.value.branch], [[], [], [], 0]);
  });

  it('say what is wrong with a mark', () => {
    assert.ok(parseMark(mark('said', 'You said', 'hi', 0)).ok);
    const bad = parseMark({ kind: 3 });
    assert.ok(!bad.ok && bad.message.includes('field `kind` should be a string'), JSON.stringify(bad));
    assert.match(el(markCard('junk')).textContent, /cannot render this mark/);
  });
});

describe('the trace', () => {
  it('puts each mark after its steps, in order', () => {
    const card = el(
      sessionCard(
        session({
          tasks: ['fix it', 'add a test'],
          steps: [step(1), step(2), step(3, { status: 'pending' })],
          marks: [
            mark('said', 'You said', 'use pathlib', 1),
            mark('ended', 'Task 1 ended', 'finished: fixed', 2),
            mark('task', 'Task 2', 'add a test', 2)
          ],
          rules: [{ path: 'AGENTS.md', chars: 120, truncated: false }, { path: 'CLAUDE.md', chars: 16000, truncated: true }]
        })
      )
    );
    const order = byClass(card, 'grinta-steps')[0].childNodes.map(n => {
      const e = n as FakeElement;
      return e.classList.contains('grinta-mark') ? e.getAttribute('data-kind') : `step ${byClass(e, 'grinta-step-number')[0].textContent}`;
    });
    assert.deepEqual(order, ['step Step 1', 'said', 'step Step 2', 'ended', 'task', 'step Step 3']);
    assert.equal(byClass(card, 'grinta-rules')[0].textContent, 'rules: AGENTS.md, CLAUDE.md (cut to 16,000 characters)');
    assert.equal(byClass(card, 'grinta-task')[0].textContent, 'Task 1fix it');
    const said = byClass(card, 'grinta-mark-said')[0];
    assert.equal(said.textContent, '»You saiduse pathlib');
  });

  it('shows a mark of a kind it does not know, and marks after the last step', () => {
    const card = el(
      sessionCard(session({ steps: [step(1)], marks: [mark('newkind', 'Something', 'new', 5)] }))
    );
    const other = byClass(card, 'grinta-mark-other');
    assert.equal(other.length, 1);
    assert.equal(other[0].textContent, '•Somethingnew');
  });

  it('marks a step a rewind undid, and its branch', () => {
    const card = el(stepCard(step(4, { rewound: true, branch: 0 })));
    assert.equal(card.getAttribute('data-rewound'), '');
    assert.ok(card.classList.contains('grinta-rewound'));
    assert.deepEqual(byClass(card, 'grinta-badge').map(b => b.textContent), ['committed', 'rewound']);
    const again = el(stepCard(step(4, { branch: 1 })));
    assert.equal(byClass(again, 'grinta-branch')[0].textContent, 'branch 1');
    assert.equal(again.getAttribute('data-rewound'), null);
  });

  it('says when a resumed proposal is stale, and what changed', () => {
    const stale = el(stepCard(step(3, { status: 'pending', restaged: true, stale: 'a.py changed since' })));
    assert.match(byClass(stale, 'grinta-stale')[0].textContent, /^Stale: staged again after the session resumed.*a\.py changed since$/);
    assert.equal(byClass(stale, 'grinta-restaged').length, 0);
    const fresh = el(stepCard(step(3, { status: 'pending', restaged: true })));
    assert.equal(byClass(fresh, 'grinta-stale').length, 0);
    assert.match(byClass(fresh, 'grinta-restaged')[0].textContent, /had not changed/);
  });
});

class FakeBoxModel {
  readonly sent: BoxMessage[] = [];
  private readonly handlers = new Map<string, Set<() => void>>();
  constructor(private readonly state: Record<string, unknown>) {}
  get(name: string): unknown {
    return this.state[name];
  }
  on(event: string, callback: () => void): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)?.add(callback);
  }
  off(event: string, callback: () => void): void {
    this.handlers.get(event)?.delete(callback);
  }
  send(message: BoxMessage): void {
    this.sent.push(message);
  }
  set(changes: Record<string, unknown>): void {
    Object.assign(this.state, changes);
    for (const name of Object.keys(changes)) this.handlers.get(`change:${name}`)?.forEach(cb => cb());
  }
}

let boxCount = 0;

function box(state: Record<string, unknown> = {}): { model: FakeBoxModel; view: MessageBox; input: FakeElement } {
  const model = new FakeBoxModel({ kind: 'message', key: `box-${++boxCount}`, mode: 'say', status: '', draft: '', ...state });
  const view = new MessageBox(model);
  fakeDocument.body.replaceChildren(el(view.node));
  return { model, view, input: byClass(el(view.node), 'grinta-box-input')[0] };
}

const tick = () => new Promise(resolve => setTimeout(resolve, 5));

describe('the message box', () => {
  it('sends on Enter what its mode offers, trimmed, and is cleared', () => {
    const { model, input } = box();
    assert.match((input as unknown as { placeholder: string }).placeholder, /reads it at its next turn/);
    typeInto(input, '  use pathlib ');
    assert.ok(typingInBox());
    const enter = press(input, 'Enter');
    assert.ok(enter.defaultPrevented && enter.stopped, 'Enter goes nowhere else');
    assert.deepEqual(model.sent, [{ event: 'say', text: 'use pathlib' }]);
    assert.equal(input.value, '');
    assert.ok(!typingInBox());

    model.set({ mode: 'continue' });
    assert.match((input as unknown as { placeholder: string }).placeholder, /next task/);
    typeInto(input, 'add a test');
    press(input, 'Enter');
    assert.deepEqual(model.sent[1], { event: 'continue', text: 'add a test' });
  });

  it('sends nothing empty, nothing with Shift+Enter, nothing when off', () => {
    const { model, input } = box();
    press(input, 'Enter');
    typeInto(input, '   ');
    press(input, 'Enter');
    typeInto(input, 'two lines');
    press(input, 'Enter', true);
    model.set({ mode: 'off' });
    assert.ok(input.disabled);
    press(input, 'Enter');
    assert.deepEqual(model.sent, []);
    assert.equal(boxMessage('decide', 'approve'), null, 'the box has no other event');
    typeInto(input, '');
  });

  it('takes back a message the kernel hands back, and shows its word', () => {
    const { model, input } = box();
    typeInto(input, 'stop using os.path');
    press(input, 'Enter');
    model.set({ draft: 'stop using os.path', status: 'the session ended before this arrived', mode: 'continue' });
    assert.equal(input.value, 'stop using os.path');
    assert.match(byClass(fakeDocument.body, 'grinta-box-status')[0].textContent, /ended before/);
    typeInto(input, '');
  });

  it('keeps what is typed, and the focus, across a redraw', async () => {
    const { model, input } = box();
    input.focus();
    fire(input, new FakeEvent('focus'));
    typeInto(input, 'half a thou');
    // A new view, even of another wrapper of the same widget (same key).
    const again = new MessageBox(new FakeBoxModel({ kind: 'message', key: model.get('key'), mode: 'say' }));
    fakeDocument.body.replaceChildren(el(again.node));
    fakeDocument.activeElement = null; // the focused box went with the old view
    const input2 = byClass(el(again.node), 'grinta-box-input')[0];
    assert.equal(input2.value, 'half a thou');
    await tick();
    assert.equal(fakeDocument.activeElement, input2, 'the new view takes the focus back');
    typeInto(input2, '');
  });

  it('keeps a card that starts waiting from taking the focus while a message is unsent', async () => {
    const { input } = box();
    typeInto(input, 'and then');
    fakeDocument.activeElement = null; // a redraw removed the box that had it
    const cardModel = { state: { kind: 'step', pending: true, payload: step(2, { status: 'pending' }) } } as {
      state: Record<string, unknown>;
    };
    const model: CardModel = {
      get: name => cardModel.state[name],
      on: () => undefined,
      off: () => undefined,
      send: () => undefined
    };
    const card = new LiveCard(model);
    fakeDocument.body.append(el(card.node));
    await tick();
    assert.equal(el(card.node).scrolledIntoView, 0);
    assert.notEqual(fakeDocument.activeElement, byClass(el(card.node), 'grinta-actions')[0]);
    typeInto(input, '');
  });
});

