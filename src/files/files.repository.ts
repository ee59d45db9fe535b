import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { FileRecord } from './file.entity';

/** The files table (records of stored uploads; the bytes are in FileStorage): every query on it. */
@Injectable()
export class FilesRepository {
  constructor(@InjectRepository(FileRecord) private readonly files: Repository<FileRecord>) {}

  insert(fields: Omit<FileRecord, 'createdAt'>): Promise<FileRecord> {
    return this.files.save(this.files.create(fields));
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<FileRecord>> {
    return paginate(
      this.files
        .createQueryBuilder('file')
        .where('file.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  findInOrganization(organizationId: string, id: string): Promise<FileRecord | null> {
    return this.files.findOneBy({ id, organizationId });
  }

  /** The organization's files among `ids`, in no particular order. */
  findAmong(organizationId: string, ids: string[]): Promise<FileRecord[]> {
    return this.files.findBy({ id: In(ids), organizationId });
  }

  /** The ids of the files a task's runs uploaded (its output files). */
  async idsOfTaskOutputs(organizationId: string, taskId: string): Promise<string[]> {
    const rows = await this.files.find({ select: { id: true }, where: { organizationId, taskId } });
    return rows.map((row) => row.id);
  }

  async delete(id: string): Promise<void> {
    await this.files.delete({ id });
  }
}
