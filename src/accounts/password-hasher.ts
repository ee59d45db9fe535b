import { ConfigOf } from '../config/config-namespace';
import { accountsConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import * as bcrypt from 'bcrypt';

/** bcrypt for account passwords only (slow on purpose); API keys use HMAC and never pay this cost. */
@Injectable()
export class PasswordHasher {
  // Compared against when the email is unknown, so a miss costs the same time as a wrong password.
  private readonly decoy: Promise<string>;

  constructor(@Inject(accountsConfig.KEY) private readonly config: ConfigOf<typeof accountsConfig>) {
    this.decoy = bcrypt.hash('decoy-password-never-matches', config.bcryptRounds);
  }

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.config.bcryptRounds);
  }

  async verify(password: string, hash: string | undefined): Promise<boolean> {
    const matches = await bcrypt.compare(password, hash ?? (await this.decoy));
    return matches && hash !== undefined;
  }
}
