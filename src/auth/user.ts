// The identity an authenticator attaches to a request (spec 5.1).
export interface UserInfo {
  name: string;
  uid: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS: UserInfo = { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] };
