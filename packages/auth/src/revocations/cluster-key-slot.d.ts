/** cluster-key-slot ships no types: the one function used, as ioredis calls it. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0…16383) of `key`, honouring its hash tag. */
  export default function calculateSlot(key: string): number;
}
