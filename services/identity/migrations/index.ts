import type { Migration } from '@platform/service-kit';
import { extensions } from './0001_extensions.ts';

/** Every migration of the identity database, oldest first. Append; never edit one that has shipped. */
export const migrations: readonly Migration[] = [extensions];
