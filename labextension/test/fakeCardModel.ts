/**
 * The kernel's side of a live card, as the card tests need it: the widget model's state
 * (`get`, change events) and the messages the card sends.
 */

import { CardMessage } from '../src/review';
import { CardModel } from '../src/render/liveCard';

export class FakeCardModel implements CardModel {
  readonly sent: CardMessage[] = [];
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

  send(message: CardMessage): void {
    this.sent.push(message);
  }

  /** As a kernel update does: every value first, then one change event per name. */
  set(changes: Record<string, unknown>): void {
    Object.assign(this.state, changes);
    for (const name of Object.keys(changes)) {
      this.handlers.get(`change:${name}`)?.forEach(callback => callback());
    }
  }
}
