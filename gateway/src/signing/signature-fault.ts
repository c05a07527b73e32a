/**
 * Why a request signature was refused. The reason is for the log only: the client always reads
 * 401 `Invalid request signature` (CONTRACT.md part 2), so the answer is never an oracle.
 */
export class SignatureFault extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'SignatureFault';
  }
}
