/**
 * The saved card's link to its notebook's kernel (src/sessionLink.ts) and the box it
 * brings back under the trace (src/render/traceBox.ts), on a fake comm and a fake DOM:
 * the link opens only for a card, follows what the kernel announces, is refused by a
 * kernel without grinta and tried again, and carries a next task with its answer; the
 * box shows only on the current session's trace, enabled once it has ended in a trusted
 * notebook, sends `continue` and nothing else, and takes back a task the kernel refused.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { TraceBox, GIVEN_NOTE } from '../src/render/traceBox';
import {
  boxView,
  LinkChannel,
  LinkStatus,
  MAX_TASK_CHARS,
  panelDisplay,
  quoted,
  readAnswer,
  readCurrent,
  RUNNING_NOTE,
  SessionLink,
  Shown,
  UNTRUSTED_NOTE
} from '../src/sessionLink';
import { byClass, FakeElement, fakeDocument, installFakeDom, press, typeInto } from './fakeDom';

installFakeDom();

const SESSION_MIME = 'application/vnd.grinta.session+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

/** A kernel comm as the link sees it: what was opened and sent, and the kernel's side. */
class FakeChannel implements LinkChannel {
  opened = 0;
  closedByPage = 0;
  readonly sent: Record<string, unknown>[] = [];
  private receive: ((data: unknown) => void) | null = null;
  private closed: (() => void) | null = null;
  private readonly replies: ((type: string, content: unknown) => void)[] = [];

  open(receive: (data: unknown) => void, closed: () => void): void {
    this.opened++;
    this.receive = receive;
    this.closed = closed;
  }

  send(data: Record<string, unknown>, iopub: (type: string, content: unknown) => void): void {
    this.sent.push(data);
    this.replies.push(iopub);
  }

  close(): void {
    this.closedByPage++;
  }

  /** The kernel sends `data` on the comm. */
  says(data: unknown): void {
    this.receive?.(data);
  }

  /** The kernel sends an output message in reply to the last message sent. */
  replies_(type: string, content: unknown): void {
    this.replies[this.replies.length - 1](type, content);
  }

  /** The kernel closes the comm (no grinta there, or it went away). */
  closes(): void {
    this.closed?.();
  }
}

function linked(): { link: SessionLink; channels: FakeChannel[]; kernel: { up: boolean } } {
  const channels: FakeChannel[] = [];
  const kernel = { up: true };
  const link = new SessionLink(() => {
    if (!kernel.up) return null;
    const channel = new FakeChannel();
    channels.push(channel);
    return channel;
  });
  return { link, channels, kernel };
}

const ended = (session = 's1') => ({ current: { session, state: 'ended' } });
const tick = () => new Promise(resolve => setTimeout(resolve, 1));

function panel(session = 's1'): { data: Record<string, unknown>; metadata: Record<string, unknown> } {
  return {
    data: {
      [WIDGET_MIME]: { model_id: 'abc', version_major: 2, version_minor: 0 },
      [SESSION_MIME]: { version: 1, session, steps: [] },
      'text/plain': 'trace'
    },
    metadata: {}
  };
}

describe('the link', () => {
  it('opens only once a card watches, and follows what the kernel announces', () => {
    const { link, channels } = linked();
    assert.equal(channels.length, 0);
    const seen: LinkStatus[] = [];
    link.watch(() => seen.push(link.state));
    assert.equal(channels.length, 1);
    assert.deepEqual(link.state, { kind: 'asking' });
    channels[0].says({ current: null });
    channels[0].says(ended());
    channels[0].says({ current: { session: 's1', state: 'sleeping' } }); // not an announcement
    assert.deepEqual(link.state, { kind: 'open', current: { session: 's1', state: 'ended' } });
    assert.deepEqual(
      seen.map(s => s.kind),
      ['asking', 'open', 'open']
    );
    link.watch(() => undefined);
    assert.equal(channels.length, 1, 'one comm per notebook');
  });

  it('is refused by a kernel without grinta, tried again when grinta shows, reset with the kernel', () => {
    const { link, channels, kernel } = linked();
    link.watch(() => undefined);
    channels[0].closes();
    assert.deepEqual(link.state, { kind: 'refused' });
    link.wake();
    assert.equal(channels.length, 1, 'a refusal stands until grinta shows');
    link.retry();
    assert.equal(channels.length, 2);
    channels[1].says(ended());
    link.retry();
    assert.equal(channels.length, 2, 'an open link is not asked again');

    kernel.up = false;
    link.reset();
    assert.equal(channels[1].closedByPage, 1);
    assert.deepEqual(link.state, { kind: 'closed' });
    link.wake();
    assert.deepEqual(link.state, { kind: 'closed' }, 'no kernel: nothing to ask');
    kernel.up = true;
    link.wake();
    assert.equal(channels.length, 3);
  });

  it('carries a next task, and the panel the kernel shows for it', async () => {
    const { link, channels } = linked();
    link.watch(() => undefined);
    channels[0].says(ended());
    const shown: Shown[] = [];
    const answer = link.continueTask('s1', 'add a test', display => shown.push(display));
    assert.deepEqual(channels[0].sent, [{ request: 'continue', session: 's1', task: 'add a test', ask: 1 }]);
    channels[0].replies_('display_data', panel('other'));
    channels[0].replies_('display_data', { data: { 'text/plain': 'x' } });
    channels[0].replies_('stream', { text: 'manual mode' });
    channels[0].replies_('display_data', panel());
    channels[0].says({ answer: 1, ok: true, message: 'given' });
    assert.deepEqual(await answer, { ok: true, message: 'given' });
    assert.deepEqual(shown, [panel()], "only this session's panel is put in the card");
  });

  it('says why a task was not carried, and sends nothing then', async () => {
    const { link, channels } = linked();
    assert.equal((await link.continueTask('s1', 'x', () => undefined)).ok, false, 'no link yet');
    link.watch(() => undefined);
    channels[0].says(ended());
    const long = await link.continueTask('s1', 'y'.repeat(MAX_TASK_CHARS + 1), () => undefined);
    assert.match(long.message, /at most 20,000 characters/);
    assert.deepEqual(channels[0].sent, []);

    const pending = link.continueTask('s1', 'z', () => undefined);
    channels[0].closes();
    assert.deepEqual(await pending, { ok: false, message: 'not sent: the kernel closed the link' });
  });
});

describe('what the kernel says', () => {
  it('reads announcements, answers and the panel display, and nothing else', () => {
    assert.equal(readCurrent({ current: null }), null);
    assert.deepEqual(readCurrent(ended()), { session: 's1', state: 'ended' });
    for (const junk of [null, 'x', {}, { current: { session: '', state: 'ended' } }, { current: 3 }]) {
      assert.equal(readCurrent(junk), undefined, JSON.stringify(junk));
    }
    assert.deepEqual(readAnswer({ answer: 2, ok: false, message: 'no' }), { ask: 2, ok: false, message: 'no' });
    assert.equal(readAnswer({ answer: '2', ok: false }), null);
    assert.equal(panelDisplay('update_display_data', panel(), 's1'), null);
    const trace = { data: { [SESSION_MIME]: { session: 's1', steps: [] } } };
    assert.equal(panelDisplay('display_data', trace, 's1'), null, 'the trace alone is no panel');
    assert.deepEqual(panelDisplay('display_data', panel(), 's1'), panel());
  });

  it('quotes a log path as the magic line reads it', () => {
    assert.equal(quoted('/w/.grinta/sessions/a-1.jsonl'), '/w/.grinta/sessions/a-1.jsonl');
    assert.equal(quoted("/my work/it's.jsonl"), `'/my work/it'"'"'s.jsonl'`);
  });
});

describe('what a saved card shows', () => {
  const open = (current: unknown): LinkStatus => ({ kind: 'open', current: readCurrent({ current }) ?? null });

  it('shows the box only on the current session, enabled once it ended in a trusted notebook', () => {
    assert.equal(boxView({ kind: 'closed' }, 's1', null, true), null);
    assert.equal(boxView({ kind: 'asking' }, 's1', null, true), null);
    assert.equal(boxView({ kind: 'refused' }, 's1', null, true), null);
    assert.equal(boxView(open({ session: 's2', state: 'ended' }), 's1', '/l.jsonl', true), null);
    assert.deepEqual(boxView(open({ session: 's1', state: 'ended' }), 's1', null, true), {
      kind: 'box',
      mode: 'continue',
      status: ''
    });
    assert.deepEqual(boxView(open({ session: 's1', state: 'running' }), 's1', null, true), {
      kind: 'box',
      mode: 'off',
      status: RUNNING_NOTE
    });
    assert.deepEqual(boxView(open({ session: 's1', state: 'ended' }), 's1', null, false), {
      kind: 'box',
      mode: 'off',
      status: UNTRUSTED_NOTE
    });
    assert.deepEqual(boxView(open(null), 's1', '/w/s 1.jsonl', true), {
      kind: 'hint',
      text: "To give this session a next task here: %grinta resume '/w/s 1.jsonl'"
    });
    assert.equal(boxView(open(null), 's1', null, true), null);
  });
});

const el = (node: HTMLElement) => node as unknown as FakeElement;

function traceBox(trusted = true, session = 's1') {
  const { link, channels } = linked();
  const shown: Shown[] = [];
  const box = new TraceBox({ session, log: '/w/log.jsonl', link, trusted, shown: d => shown.push(d) });
  fakeDocument.body.replaceChildren(el(box.node));
  const input = () => byClass(el(box.node), 'grinta-box-input')[0];
  const status = () => byClass(el(box.node), 'grinta-box-status')[0]?.textContent;
  return { link, channel: channels[0], box, shown, input, status };
}

describe('the box under a saved trace', () => {
  it('shows nothing until the kernel says this session is current', () => {
    const { channel, box, input } = traceBox();
    assert.equal(el(box.node).childNodes.length, 0);
    channel.says(ended('s2'));
    assert.equal(input(), undefined, "another session's trace takes no task");
    channel.says({ current: null });
    assert.match(byClass(el(box.node), 'grinta-box-hint')[0].textContent, /%grinta resume \/w\/log\.jsonl$/);
    channel.says(ended());
    assert.equal(input().disabled, false);
    assert.match((input() as unknown as { placeholder: string }).placeholder, /next task/);
    channel.closes();
    assert.equal(el(box.node).childNodes.length, 0, 'the kernel went: no box');
    box.dispose();
  });

  it('gives the next task, and the panel the kernel shows takes the card\'s place', async () => {
    const { channel, box, shown, input, status } = traceBox();
    channel.says(ended());
    typeInto(input(), '  add a test for b ');
    const enter = press(input(), 'Enter');
    assert.ok(enter.defaultPrevented && enter.stopped, 'Enter goes nowhere else');
    assert.deepEqual(channel.sent, [{ request: 'continue', session: 's1', task: 'add a test for b', ask: 1 }]);
    assert.equal(input().value, '');
    channel.replies_('display_data', panel());
    channel.says({ answer: 1, ok: true, message: 'given' });
    await tick();
    assert.deepEqual(shown, [panel()]);
    assert.equal(status(), GIVEN_NOTE);
    channel.says({ current: { session: 's1', state: 'running' } });
    assert.ok(input().disabled);
    assert.equal(status(), RUNNING_NOTE);
    box.dispose();
  });

  it('takes back a task the kernel refused, with its reason, twice', async () => {
    const { channel, box, input, status } = traceBox(true, 's3');
    channel.says(ended('s3'));
    for (const ask of [1, 2]) {
      typeInto(input(), 'add a test');
      press(input(), 'Enter');
      channel.says({ answer: ask, ok: false, message: 'the session is still working on its task' });
      await tick();
      assert.equal(input().value, 'add a test', `refusal ${ask}`);
      assert.equal(status(), 'the session is still working on its task');
    }
    typeInto(input(), '');
    box.dispose();
  });

  it('is disabled, saying why, in a notebook that is not trusted, and sends nothing', () => {
    const { channel, box, input, status } = traceBox(false, 's4');
    channel.says(ended('s4'));
    assert.ok(input().disabled);
    assert.equal(status(), UNTRUSTED_NOTE);
    typeInto(input(), 'add a test');
    press(input(), 'Enter');
    assert.deepEqual(channel.sent, []);
    typeInto(input(), '');
    box.dispose();
  });
});
