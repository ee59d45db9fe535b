import { defineDomainErrors, ErrorKind } from '../../../src/common/domain-error';

/** The extension's codes; README.md beside this file lists each with its status (the e2e spec checks). */
export enum ProjectErrorCode {
  NotFound = 'not_found',
  NameTaken = 'project_name_taken',
}

/** The problem filter answers them like the core's: not_found 404, project_name_taken 409. */
export class ProjectError extends defineDomainErrors('projects', {
  [ProjectErrorCode.NotFound]: ErrorKind.NotFound,
  [ProjectErrorCode.NameTaken]: ErrorKind.Conflict,
}) {}
