import { schema } from '../../common/validation';

/** Request fields shared by the sign-in endpoints, with the contract's limits. */
export const fields = {
  deviceId: schema.string({ minLength: 1, maxLength: 255 }),
  // An empty code is allowed and ignored (referral rule 2).
  refCode: schema.string({ maxLength: 32 }),
  email: schema.string({ format: 'email', maxLength: 254 }),
  password: schema.string({ minLength: 8, maxLength: 128 }),
  name: schema.string({ maxLength: 120 }),
  refreshToken: schema.string({ minLength: 1, maxLength: 512 }),
};
