import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { textWithoutControls } from '../migrations/0013_text_without_controls.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

/** Every character the API refuses in names and account text (openapi.yaml, PersonName and its kin). */
const REFUSED = ['\u0001', '\u0007', '\b', '\t', '\n', '\r', '\u001b', '\u007f', '\u0085', '\u009b', '\u061c', '\u200e', '\u200f', '\u2028', '\u2029', '\u202e', '\u2066', '\u2069'];

describe('migration 0013: rows written before names were checked are cleaned of control and bidi characters', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity({ OPENAPI_VALIDATE_RESPONSES: 'true' });
  });
  after(async () => {
    await identity.close();
  });

  it('replaces each in names and account text with U+FFFD, percent-encodes it in a picture URL, leaves other text alone; the API then answers the user as documented', async () => {
    const user = await identity.createUser();
    const hostile = `A${REFUSED.join('')}Z`;
    await identity.db('users').where({ id: user.id }).update({ first_name: hostile, mid_name: 'Şükrü 😀 دانش\u200c', last_name: `x${'\u202e'}y` });
    await identity.db('accounts').insert({
      user_id: user.id,
      type: 'INDIVIDUAL',
      mobile_phone_number: '+90532\u001b123',
      company: `Acme${'\u2066'}`,
      profile_picture_url: `https://cdn.example.com/${'\u202e'}gpj.exe`,
    });
    const before = await request(identity.app).get(`/v1/users/${user.id}`).set('Authorization', `Bearer ${await identity.tokenFor(['ADMIN'])}`);
    assert.equal(before.status, 500, 'a row holding them fails the documented answer (responses are validated here)');

    await textWithoutControls.up(identity.db);
    await textWithoutControls.up(identity.db);

    const row = await identity.db('users').where({ id: user.id }).first('first_name', 'mid_name', 'last_name');
    assert.deepEqual(row, { first_name: `A${'\uFFFD'.repeat(REFUSED.length)}Z`, mid_name: 'Şükrü 😀 دانش\u200c', last_name: 'x\uFFFDy' });
    const account = await identity.db('accounts').where({ user_id: user.id }).first('mobile_phone_number', 'company', 'profile_picture_url');
    assert.deepEqual(account, { mobile_phone_number: '+90532\uFFFD123', company: 'Acme\uFFFD', profile_picture_url: 'https://cdn.example.com/%E2%80%AEgpj.exe' });
    const after = await request(identity.app).get(`/v1/users/${user.id}`).set('Authorization', `Bearer ${await identity.tokenFor(['ADMIN'])}`);
    assert.equal(after.status, 200, JSON.stringify(after.body));
  });

  it('leaves a database without such rows as it is', async () => {
    const user = await identity.createUser({ firstName: `Ayşe-${randomUUID().slice(0, 4)}` });
    const before = await identity.db('users').where({ id: user.id }).first();
    await textWithoutControls.up(identity.db);
    assert.deepEqual(await identity.db('users').where({ id: user.id }).first(), before);
  });
});
