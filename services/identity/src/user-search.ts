// Identity's user search, for the benchmark that times it on a million users (bench/groups/users.ts): it
// migrates around its own bulk load, asks for a page from the middle and EXPLAINs the SQL findUsers
// sends. `@platform/identity/user-search`; the running service is index.ts, nothing here starts anything.
export { migrations } from '../migrations/index.ts';
export { encodeCursor } from './pagination/cursor.ts';
export { type UserFilter, findUsers } from './user-records/users.repository.ts';
