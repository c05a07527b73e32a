import { ServiceUnavailableError } from '@platform/errors';
import { currentRequest } from './http-logger.ts';

/** The message of the 503 a request gets when its deadline (REQUEST_DEADLINE_MS) passed. */
export const DEADLINE_MESSAGE = 'The request took too long to complete; try again later';

/** What the log says of a request read only after its caller stopped waiting (answered 503 at once). */
export const CALLER_GONE_REASON = 'the caller stopped waiting before this request was read; nothing of it was done';

/**
 * The deadline of one request (REQUEST_DEADLINE_MS) as its changes see it, so that the deadline's 503 always
 * means "nothing was changed": the gateway frees the idempotency key of a 5xx (CONTRACT.md part 3), and a
 * retry must apply the change once, not twice.
 * - The request envelope answers 503 when the deadline passes (`expire`), unless a change of the request
 *   committed or is committing: then the request's own answer, whenever it comes, tells what happened.
 * - A transaction of the request (`deadlineTransaction`) starts and commits only while the deadline has not
 *   passed (`assertOpen`, `claimCommit`), and never once it was refused or answered 503; after a first
 *   commit, the request's further transactions are part of the same change and go on, and so does work
 *   after the request's own answer started (a mail, a reset token stored after an anonymous answer).
 * The times are `performance.now()`'s.
 */
export class RequestDeadline {
  #committing = 0;
  #committed = false;
  #expired = false;
  /** When the deadline passes. */
  readonly at: number;
  readonly #answer: { readonly headersSent: boolean };

  /** `answer`: the request's response, whose answer, once started, no deadline can replace. */
  constructor(at: number, answer: { readonly headersSent: boolean }) {
    this.at = at;
    this.#answer = answer;
  }

  /**
   * How long the request's answer may still take: the time left before the deadline (zero or less once it
   * passed) until the answer started, Infinity after. What the answer waits for (a provider's call made
   * after a commit, when the deadline's 503 no longer comes) must end by then, or the gateway's upstream
   * timeout comes first.
   */
  answerBudgetMs(): number {
    return this.#answer.headersSent ? Infinity : this.at - performance.now();
  }

  /**
   * How long a change of the request may still take: the answer's budget while the deadline holds its
   * changes, Infinity once a change committed (what follows is part of it).
   */
  changeBudgetMs(): number {
    return this.#committed ? Infinity : this.answerBudgetMs();
  }

  /**
   * The deadline passed: true when the envelope may answer 503 (nothing of the request committed or is
   * committing), and then nothing of it commits any more; false when the answer is the request's own.
   */
  expire(): boolean {
    if (this.#committed || this.#committing > 0) return false;
    this.#expired = true;
    return true;
  }

  /**
   * Throws the deadline's 503 when the request may change nothing more: its deadline passed with nothing
   * committed and no answer of its own started. Once thrown, it is thrown every time after.
   */
  assertOpen(): void {
    if (this.#expired) throw new ServiceUnavailableError(DEADLINE_MESSAGE);
    if (this.changeBudgetMs() > 0) return;
    this.#expired = true;
    throw new ServiceUnavailableError(DEADLINE_MESSAGE);
  }

  /**
   * A transaction of the request is about to commit: `assertOpen`, then the commit counts as in flight (the
   * envelope's 503 waits for it) until the returned function is called, once, with its outcome.
   */
  claimCommit(): (committed: boolean) => void {
    this.assertOpen();
    this.#committing += 1;
    return (committed) => {
      this.#committing -= 1;
      if (committed) this.#committed = true;
    };
  }
}

/**
 * `RequestDeadline.assertOpen` of the request being handled where this is called: throws the deadline's 503
 * when it may change nothing more. Nothing outside a request, or in a process without a deadline.
 */
export function assertRequestOpen(): void {
  currentRequest()?.deadline?.assertOpen();
}

/** `RequestDeadline.answerBudgetMs` of the request being handled where this is called; Infinity outside one, or without a deadline. */
export function answerBudgetMs(): number {
  return currentRequest()?.deadline?.answerBudgetMs() ?? Infinity;
}
