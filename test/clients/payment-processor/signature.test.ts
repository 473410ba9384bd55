import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { ProcessorClient } from '../../../clients/payment-processor/client';
import { notificationChecksum } from '../../../clients/payment-processor/signature';
import { memoryCircuit } from '../../harness';

const SECRET = 'notification-secret';
const client = new ProcessorClient({ baseUrl: 'https://processor.test', userName: 'u', password: 'p', notificationSecret: SECRET, circuit: memoryCircuit() });

const params = { mdOrder: 'order-1', orderNumber: 'payment-1', operation: 'deposited', status: '1' };

function signed(fields: Record<string, string>, secret = SECRET): Record<string, string> {
  return { ...fields, checksum: notificationChecksum(fields, secret) };
}

describe('processor notification signature', () => {
  it('is the uppercase HMAC-SHA256 of the parameters sorted by name as name;value;', () => {
    const expected = createHmac('sha256', SECRET)
      .update('mdOrder;order-1;operation;deposited;orderNumber;payment-1;status;1;')
      .digest('hex')
      .toUpperCase();
    expect(notificationChecksum(params, SECRET)).to.equal(expected);
  });

  it('accepts a validly signed notification and says which order moved', () => {
    expect(client.verifyNotification(signed(params))).to.deep.equal({
      orderId: 'order-1', paymentId: 'payment-1', operation: 'deposited', success: true,
    });
  });

  it('accepts a failure notification and extra signed parameters', () => {
    const notification = signed({ ...params, operation: 'declinedByTimeout', status: '0', amount: '14900' });
    expect(client.verifyNotification(notification)).to.include({ operation: 'declinedByTimeout', success: false });
  });

  it('accepts the checksum in lower case', () => {
    const notification = signed(params);
    expect(client.verifyNotification({ ...notification, checksum: notification.checksum.toLowerCase() })).not.to.equal(null);
  });

  it('rejects a notification whose value was changed after signing', () => {
    expect(client.verifyNotification({ ...signed({ ...params, status: '0' }), status: '1' })).to.equal(null);
    expect(client.verifyNotification({ ...signed(params), orderNumber: 'payment-2' })).to.equal(null);
  });

  it('rejects a notification with a parameter added after signing', () => {
    expect(client.verifyNotification({ ...signed(params), amount: '1' })).to.equal(null);
  });

  it('rejects an unsigned notification', () => {
    expect(client.verifyNotification(params)).to.equal(null);
  });

  it('rejects a notification signed with another secret', () => {
    expect(client.verifyNotification(signed(params, 'another-secret'))).to.equal(null);
  });

  it('rejects a checksum that is not 64 hex digits', () => {
    expect(client.verifyNotification({ ...params, checksum: 'ABC' })).to.equal(null);
    expect(client.verifyNotification({ ...params, checksum: 'Z'.repeat(64) })).to.equal(null);
  });

  it('rejects a signed notification with an unknown operation, a bad status or no order id', () => {
    expect(client.verifyNotification(signed({ ...params, operation: 'teleported' }))).to.equal(null);
    expect(client.verifyNotification(signed({ ...params, status: 'yes' }))).to.equal(null);
    const { orderNumber, operation, status } = params;
    expect(client.verifyNotification(signed({ orderNumber, operation, status }))).to.equal(null);
  });
});
