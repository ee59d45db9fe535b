import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'gatehouse:public';

/** Opts a route out of credential checks. Everything else is denied without a credential. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
