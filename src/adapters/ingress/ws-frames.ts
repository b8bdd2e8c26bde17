/**
 * WebSocket frame boundaries (RFC 6455 §5.2) in the replica-to-client direction of a tunnel,
 * followed without copying a byte, so that at shutdown the ingress can end a tunnel the way a
 * server going away does: a close frame with code 1001 between two frames, not a cut mid-frame.
 */
export class FrameTracker {
  private readonly head = new Uint8Array(14);
  private have = 0;
  private need = 2;
  /** Payload bytes of the current frame still to come. */
  private left = 0;

  /** No frame is partly sent. */
  get atBoundary(): boolean {
    return this.left === 0 && this.have === 0;
  }

  feed(b: Uint8Array): void {
    let i = 0;
    while (i < b.length) {
      if (this.left > 0) {
        const take = Math.min(this.left, b.length - i);
        i += take;
        this.left -= take;
        continue;
      }
      this.head[this.have++] = b[i++];
      if (this.have === 2) {
        const l7 = this.head[1] & 0x7f;
        this.need = 2 + (l7 === 126 ? 2 : l7 === 127 ? 8 : 0) + (this.head[1] & 0x80 ? 4 : 0);
      }
      if (this.have >= 2 && this.have === this.need) {
        const l7 = this.head[1] & 0x7f;
        let len = l7;
        if (l7 === 126) len = (this.head[2] << 8) | this.head[3];
        else if (l7 === 127) {
          len = 0;
          for (let k = 2; k < 10; k++) len = len * 256 + this.head[k];
        }
        this.left = len;
        this.have = 0;
        this.need = 2;
      }
    }
  }
}

/** A server's close frame with code 1001 (going away), no reason. */
export const GOING_AWAY = Uint8Array.of(0x88, 0x02, 0x03, 0xe9);
