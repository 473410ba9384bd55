/** How the payer pays on the processor's page: a bank card or the Faster Payments System (SBP). */
export type PaymentMethod = 'card' | 'sbp';
