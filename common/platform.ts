/** The mobile platforms a device registers for push, each with its own gateway (FCM, APNs). */
export type Platform = 'ios' | 'android';
